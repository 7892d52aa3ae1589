// Host memory of the process from /proc (see process_memory.h).
#include "dattn/core/process_memory.h"

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

namespace dattn {

namespace {

// The value of the "<key>   123456 kB" line of a /proc file, in bytes; -1 when absent.
std::int64_t proc_kib_field(const char* file, const std::string& key) {
  std::ifstream status(file);
  std::string line;
  while (std::getline(status, line))
    if (line.rfind(key, 0) == 0) {
      std::istringstream in(line.substr(key.size()));
      std::int64_t kib = -1;
      in >> kib;
      return kib < 0 ? -1 : kib * 1024;
    }
  return -1;
}

}  // namespace

std::int64_t host_peak_rss_bytes() { return proc_kib_field("/proc/self/status", "VmHWM:"); }

std::int64_t host_memory_available_bytes() { return proc_kib_field("/proc/meminfo", "MemAvailable:"); }

void reset_host_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

}  // namespace dattn
