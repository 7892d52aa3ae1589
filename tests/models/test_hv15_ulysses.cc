// The local pieces of HunyuanVideo-1.5's Ulysses exchange (models/hunyuanvideo15/ulysses.h): a rank's
// heads of the replicated text q/k/v, and the RoPE rows of a rank's tokens. The exchange itself runs
// under mpirun in CliUlyssesHv15.*.
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "models/hunyuanvideo15/ulysses.h"

namespace dattn::hv15 {
namespace {

// [B, N, H, D] with x[b, n, h, d] = 1000 b + 100 n + 10 h + d.
Tensor numbered(std::int64_t b, std::int64_t n, std::int64_t h, std::int64_t d) {
  std::vector<float> v;
  for (std::int64_t i = 0; i < b; ++i)
    for (std::int64_t t = 0; t < n; ++t)
      for (std::int64_t k = 0; k < h; ++k)
        for (std::int64_t c = 0; c < d; ++c) v.push_back(static_cast<float>(1000 * i + 100 * t + 10 * k + c));
  return Tensor::from_f32(v, {b, n, h, d});
}

TEST(Hv15Ulysses, HeadSliceTakesTheRanksHeadsOfEveryToken) {
  const Tensor x = numbered(2, 3, 4, 2);
  for (int ranks : {1, 2, 4})
    for (int rank = 0; rank < ranks; ++rank) {
      const std::int64_t h = 4 / ranks;
      const Tensor got = head_slice(x, rank, ranks);
      ASSERT_EQ(got.shape(), (Shape{2, 3, h, 2}));
      const std::vector<float> v = got.to_f32_vector();
      std::size_t at = 0;
      for (std::int64_t i = 0; i < 2; ++i)
        for (std::int64_t t = 0; t < 3; ++t)
          for (std::int64_t k = rank * h; k < (rank + 1) * h; ++k)
            for (std::int64_t c = 0; c < 2; ++c, ++at)
              EXPECT_EQ(v[at], static_cast<float>(1000 * i + 100 * t + 10 * k + c)) << rank << "/" << ranks;
    }
}

TEST(Hv15Ulysses, SliceRopeKeepsTheRowsOfTheRanksTokens) {
  // Row t of the tables holds 100 t + column.
  const Tensor cos = numbered(1, 6, 1, 4).reshape({6, 4}), sin = numbered(1, 6, 4, 1).reshape({6, 4});
  const RopeTables part = slice_rope({cos, sin}, 2, 3);
  ASSERT_EQ(part.cos.shape(), (Shape{3, 4}));
  ASSERT_EQ(part.sin.shape(), (Shape{3, 4}));
  std::vector<float> want_cos, want_sin;
  for (int t = 2; t < 5; ++t)
    for (int c = 0; c < 4; ++c) {
      want_cos.push_back(static_cast<float>(100 * t + c));
      want_sin.push_back(static_cast<float>(100 * t + 10 * c));
    }
  EXPECT_EQ(part.cos.to_f32_vector(), want_cos);
  EXPECT_EQ(part.sin.to_f32_vector(), want_sin);
}

}  // namespace
}  // namespace dattn::hv15
