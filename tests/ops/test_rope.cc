// apply_rope_interleaved against a float64 reference, with arbitrary tables (so cos and sin columns
// that come from different axes are exercised) and with true rotation tables (norms preserved).
#include <cmath>

#include <gtest/gtest.h>

#include "dattn/ops/rope.h"
#include "ops/op_test_util.h"

namespace dattn::testing {
namespace {

std::vector<double> rope_ref(const std::vector<double>& x, const std::vector<double>& c, const std::vector<double>& s,
                             std::int64_t b, std::int64_t seq, std::int64_t h, std::int64_t d) {
  std::vector<double> y(x.size());
  for (std::int64_t bi = 0; bi < b; ++bi)
    for (std::int64_t si = 0; si < seq; ++si)
      for (std::int64_t hi = 0; hi < h; ++hi)
        for (std::int64_t i = 0; i < d; i += 2) {
          const std::int64_t o = ((bi * seq + si) * h + hi) * d + i;
          const double x1 = x[o], x2 = x[o + 1], cv = c[si * d + i], sv = s[si * d + i + 1];
          y[o] = x1 * cv - x2 * sv;
          y[o + 1] = x1 * sv + x2 * cv;
        }
  return y;
}

TEST(OpsRope, ArbitraryTablesMatchFloat64) {
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  for (DType dt : kFloatDTypes) {
    SCOPED_TRACE(std::string(dtype_name(dt)) + " seed " + std::to_string(seed));
    auto x = random_tensor({2, 9, 3, 16}, dt, rng);
    auto c = random_tensor({9, 16}, DType::F32, rng);
    auto s = random_tensor({9, 16}, DType::F32, rng);
    EXPECT_EQ(check_against(ops::apply_rope_interleaved(x.t, c.t, s.t), rope_ref(x.v, c.v, s.v, 2, 9, 3, 16),
                            rounding_limit(dt)),
              "");
  }
}

TEST(OpsRope, RotationTablesPreservePairNorms) {
  std::mt19937_64 rng(test::fresh_seed());
  const std::int64_t seq = 7, d = 8;
  std::vector<float> c(seq * d), s(seq * d);
  for (std::int64_t p = 0; p < seq; ++p)
    for (std::int64_t i = 0; i < d / 2; ++i) {
      const double angle = p * std::pow(10000.0, -2.0 * i / d);
      c[p * d + 2 * i] = c[p * d + 2 * i + 1] = static_cast<float>(std::cos(angle));
      s[p * d + 2 * i] = s[p * d + 2 * i + 1] = static_cast<float>(std::sin(angle));
    }
  auto x = random_tensor({1, seq, 2, d}, DType::F32, rng);
  Tensor y = ops::apply_rope_interleaved(x.t, Tensor::from_f32(c, {seq, d}), Tensor::from_f32(s, {seq, d}));
  const auto yv = y.to_f64_vector();
  for (std::size_t i = 0; i < yv.size(); i += 2)
    EXPECT_NEAR(std::hypot(yv[i], yv[i + 1]), std::hypot(x.v[i], x.v[i + 1]), 1e-5) << i;
  // Position 0 is the identity.
  for (std::int64_t i = 0; i < 2 * d; ++i) EXPECT_EQ(yv[i], x.v[i]);
}

// Rotate-half: element i pairs with i + D/2 (first half, subtracted) or i - D/2 (second half, added).
std::vector<double> rotate_half_ref(const std::vector<double>& x, const std::vector<double>& c,
                                    const std::vector<double>& s, std::int64_t seq, std::int64_t h, std::int64_t d) {
  std::vector<double> y(x.size());
  const std::int64_t half = d / 2;
  for (std::size_t o = 0; o < x.size(); ++o) {
    const std::int64_t col = std::int64_t(o) % d, pos = std::int64_t(o) / (h * d) % seq;
    const double rot = col < half ? -x[o + half] : x[o - half];
    y[o] = x[o] * c[pos * d + col] + rot * s[pos * d + col];
  }
  return y;
}

TEST(OpsRope, RotateHalfArbitraryTablesMatchFloat64) {
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  for (std::int64_t d : {std::int64_t{12}, std::int64_t{128}})
    for (DType dt : kFloatDTypes) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " D " + std::to_string(d) + " seed " + std::to_string(seed));
      auto x = random_tensor({2, 9, 3, d}, dt, rng);
      auto c = random_tensor({9, d}, DType::F32, rng);
      auto s = random_tensor({9, d}, DType::F32, rng);
      EXPECT_EQ(check_against(ops::apply_rope_rotate_half(x.t, c.t, s.t), rotate_half_ref(x.v, c.v, s.v, 9, 3, d),
                              rounding_limit(dt)),
                "");
    }
  Tensor odd = Tensor::zeros({1, 2, 1, 5}, DType::F32);
  EXPECT_EQ(user_error([&] { ops::apply_rope_rotate_half(odd, Tensor::zeros({2, 5}, DType::F32), Tensor::zeros({2, 5}, DType::F32)); }),
            "apply_rope_rotate_half: x [1,2,1,5] fp32 cpu: head dim must be even");
}

TEST(OpsRope, TableShapeMustMatch) {
  Tensor x = Tensor::zeros({1, 4, 2, 8}, DType::F32);
  EXPECT_EQ(user_error([&] { ops::apply_rope_interleaved(x, Tensor::zeros({4, 6}, DType::F32), Tensor::zeros({4, 8}, DType::F32)); }),
            "apply_rope_interleaved: cos [4,6] fp32 cpu: expected shape [4,8]");
}

}  // namespace
}  // namespace dattn::testing
