#include "dattn/core/parallel_copy.h"

#include <cstdint>
#include <cstring>

namespace dattn {

void parallel_copy(void* dst, const void* src, std::size_t n) {
  // 1 MiB blocks: big enough that a thread's start and its page faults amortise, small enough that 16
  // threads share a 32 MiB staging buffer evenly.
  constexpr std::size_t kBlock = std::size_t{1} << 20;
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
