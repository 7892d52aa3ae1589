// The sinusoidal timestep embedding: layout (flip, odd width, frequency shift) and values against
// float64, and the float32 argument that diffusers' reference numbers contain.
#include <cmath>

#include <gtest/gtest.h>

#include "dattn/ops/embedding.h"
#include "ops/op_test_util.h"

namespace dattn::testing {
namespace {

// Exact math in float64: no float32 step anywhere.
std::vector<double> embedding_f64(const std::vector<double>& ts, int dim, bool flip, double shift) {
  const int half = dim / 2;
  std::vector<double> y(ts.size() * dim, 0.0);
  for (std::size_t r = 0; r < ts.size(); ++r)
    for (int i = 0; i < half; ++i) {
      const double arg = ts[r] * std::exp(-std::log(10000.0) * i / (half - shift));
      y[r * dim + i] = flip ? std::cos(arg) : std::sin(arg);
      y[r * dim + half + i] = flip ? std::sin(arg) : std::cos(arg);
    }
  return y;
}

TEST(OpsTimestepEmbedding, MatchesFloat64UpToTheFloat32Argument) {
  const std::vector<double> ts = {0.0, 0.25, 1.0, 17.0, 500.0, 700.0, 999.0};
  Tensor t = Tensor::from_f64(ts, {7}, DType::F64);
  for (bool flip : {true, false})
    for (float shift : {0.0f, 1.0f})
      for (int dim : {256, 33}) {
        SCOPED_TRACE("flip " + std::to_string(flip) + " shift " + std::to_string(shift) + " dim " + std::to_string(dim));
        ops::TimestepEmbeddingParams p;
        p.dim = dim, p.flip_sin_to_cos = flip, p.downscale_freq_shift = shift;
        Tensor e = ops::timestep_embedding(t, p);
        ASSERT_EQ(e.shape(), (Shape{7, dim}));
        ASSERT_EQ(e.dtype(), DType::F32);
        // The float32 product t * freq is off by up to |t| 2^-24 rad from the exact argument.
        EXPECT_EQ(check_against(e, embedding_f64(ts, dim, flip, shift), 1e-4), "");
        if (dim % 2) {  // odd widths get a zero last column
          const auto v = e.to_f64_vector();
          for (int r = 0; r < 7; ++r) EXPECT_EQ(v[r * dim + dim - 1], 0.0);
        }
      }
}

TEST(OpsTimestepEmbedding, ArgumentIsTheFloat32Product) {
  // diffusers: freq = exp(fl32(-ln(1e4) * i) / half) in float32, arg = fl32(fl32(t) * freq). Computing
  // the argument in double instead would move sin/cos at t = 999 by up to 6e-5, which this catches.
  const double t = 999.0;
  ops::TimestepEmbeddingParams p;
  Tensor e = ops::timestep_embedding(Tensor::from_f64({t}, {1}, DType::F64), p);
  const auto v = e.to_f64_vector();
  double worst = 0;
  for (int i = 0; i < 128; ++i) {
    const float expo = (static_cast<float>(-std::log(10000.0)) * static_cast<float>(i)) / 128.0f;
    const float freq = static_cast<float>(std::exp(double(expo)));
    const float arg = static_cast<float>(t) * freq;
    worst = std::max(worst, std::abs(v[i] - std::cos(double(arg))));
    worst = std::max(worst, std::abs(v[128 + i] - std::sin(double(arg))));
  }
  EXPECT_LE(worst, 1.2e-7);  // float32 rounding of the result only
}

TEST(OpsTimestepEmbedding, ZeroTimestepIsCosOnesSinZeros) {
  Tensor e = ops::timestep_embedding(Tensor::zeros({2}, DType::F32), {});
  const auto v = e.to_f64_vector();
  for (int r = 0; r < 2; ++r)
    for (int i = 0; i < 128; ++i) {
      EXPECT_EQ(v[r * 256 + i], 1.0);
      EXPECT_EQ(v[r * 256 + 128 + i], 0.0);
    }
}

}  // namespace
}  // namespace dattn::testing
