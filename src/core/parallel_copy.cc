#include "dattn/core/parallel_copy.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "dattn/core/error.h"

namespace dattn {

namespace {

constexpr std::size_t kBlock = std::size_t{1} << 20;

// Reads all n bytes (pread may return fewer); 0 on success, else the errno (-1: the file ended).
int read_fully(int fd, char* dst, std::uint64_t offset, std::size_t n) {
  while (n) {
    const ssize_t got = ::pread(fd, dst, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return errno;
    if (got == 0) return -1;
    dst += got, offset += static_cast<std::uint64_t>(got), n -= static_cast<std::size_t>(got);
  }
  return 0;
}

}  // namespace

void parallel_read(void* dst, int fd, std::uint64_t offset, std::size_t n, const char* what) {
  auto* to = static_cast<char*>(dst);
  const std::int64_t blocks = static_cast<std::int64_t>((n + kBlock - 1) / kBlock);
  std::atomic<int> error{0};
  if (n < 4 * kBlock) {
    error = read_fully(fd, to, offset, n);
  } else {
#pragma omp parallel for schedule(static)
    for (std::int64_t b = 0; b < blocks; ++b) {
      const std::size_t begin = static_cast<std::size_t>(b) * kBlock;
      const std::size_t len = begin + kBlock <= n ? kBlock : n - begin;
      if (const int e = read_fully(fd, to + begin, offset + begin, len)) error = e;
    }
  }
  if (const int e = error.load())
    throw UserError(std::string(what) + ": cannot read " + std::to_string(n) + " bytes at offset " +
                    std::to_string(offset) + ": " + (e < 0 ? std::string("the file ends before them") : std::strerror(e)));
}

void parallel_copy(void* dst, const void* src, std::size_t n) {
  // 1 MiB blocks (kBlock): big enough that a thread's start and its page faults amortise, small enough
  // that 16 threads share a 32 MiB staging buffer evenly.
  if (n < 4 * kBlock) {
    if (n) std::memcpy(dst, src, n);
    return;
  }
  auto* to = static_cast<char*>(dst);
  const auto* from = static_cast<const char*>(src);
  const std::int64_t blocks = static_cast<std::int64_t>((n + kBlock - 1) / kBlock);
#pragma omp parallel for schedule(static)
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::size_t begin = static_cast<std::size_t>(b) * kBlock;
    const std::size_t len = begin + kBlock <= n ? kBlock : n - begin;
    std::memcpy(to + begin, from + begin, len);
  }
}

}  // namespace dattn
