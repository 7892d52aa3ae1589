// parallel_copy: every byte copied, whatever the size (below the threshold, exact blocks, a ragged
// last block), and nothing written past the end.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "dattn/core/parallel_copy.h"

namespace dattn {
namespace {

TEST(ParallelCopy, CopiesEveryByteAndNoMore) {
  std::mt19937_64 rng(1);
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{4095}, 4 * kMiB - 1, 4 * kMiB, 5 * kMiB + 3,
                        17 * kMiB}) {
    std::vector<std::uint8_t> src(n), dst(n + 64, 0xA5);
    for (auto& b : src) b = static_cast<std::uint8_t>(rng());
    parallel_copy(dst.data(), src.data(), n);
    EXPECT_TRUE(std::equal(src.begin(), src.end(), dst.begin())) << n << " bytes";
    for (std::size_t i = n; i < dst.size(); ++i) ASSERT_EQ(dst[i], 0xA5) << "byte " << i << " past " << n;
  }
}

}  // namespace
}  // namespace dattn
