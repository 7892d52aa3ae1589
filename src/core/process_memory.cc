// Host memory of the process from /proc (see process_memory.h).
#include "dattn/core/process_memory.h"

#include <fstream>
#include <sstream>
#include <string>

namespace dattn {

std::int64_t host_peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) {
      std::istringstream in(line.substr(6));
      std::int64_t kib = -1;
      in >> kib;  // the kernel reports "VmHWM:   123456 kB"
      return kib < 0 ? -1 : kib * 1024;
    }
  return -1;
}

void reset_host_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

}  // namespace dattn
