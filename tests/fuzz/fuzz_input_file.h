#pragma once
// The fuzz input as a file, for readers that take a path: one file per process in /dev/shm (or TMPDIR),
// rewritten for every input.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace dattn::fuzz {

inline const std::string& input_path(const char* tag) {
  static const std::string path = [tag] {
    const char* dir = std::getenv("TMPDIR");
    const std::string base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : (dir ? dir : "/tmp");
    return base + "/dattn_fuzz_" + tag + "_" + std::to_string(::getpid());
  }();
  return path;
}

inline const std::string& write_input(const char* tag, const std::uint8_t* data, std::size_t size) {
  const std::string& path = input_path(tag);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  if (size && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  return path;
}

}  // namespace dattn::fuzz
