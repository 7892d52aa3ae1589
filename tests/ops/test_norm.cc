// layer_norm (with and without affine) and rms_norm against float64 references, on rows with a large
// mean (the case where a one-pass float32 variance loses digits).
#include <cmath>

#include <gtest/gtest.h>

#include "dattn/ops/norm.h"
#include "ops/norm_rope_ref.h"
#include "ops/op_test_util.h"

namespace dattn::testing {
namespace {

std::vector<double> layer_norm_ref(const std::vector<double>& x, std::int64_t d, double eps, const double* w,
                                   const double* b) {
  std::vector<double> y(x.size());
  for (std::size_t r = 0; r < x.size() / d; ++r) {
    const double* in = x.data() + r * d;
    double mean = 0, var = 0;
    for (std::int64_t i = 0; i < d; ++i) mean += in[i] / d;
    for (std::int64_t i = 0; i < d; ++i) var += (in[i] - mean) * (in[i] - mean) / d;
    for (std::int64_t i = 0; i < d; ++i) {
      const double n = (in[i] - mean) / std::sqrt(var + eps);
      y[r * d + i] = w ? n * w[i] + b[i] : n;
    }
  }
  return y;
}

std::vector<double> rms_norm_ref(const std::vector<double>& x, std::int64_t d, double eps, const double* w) {
  std::vector<double> y(x.size());
  for (std::size_t r = 0; r < x.size() / d; ++r) {
    double ms = 0;
    for (std::int64_t i = 0; i < d; ++i) ms += x[r * d + i] * x[r * d + i] / d;
    for (std::int64_t i = 0; i < d; ++i) y[r * d + i] = x[r * d + i] / std::sqrt(ms + eps) * (w ? w[i] : 1.0);
  }
  return y;
}

TEST(OpsNorm, LayerNormWithAndWithoutAffine) {
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  for (DType dt : kFloatDTypes) {
    SCOPED_TRACE(std::string(dtype_name(dt)) + " seed " + std::to_string(seed));
    auto x = random_tensor({3, 7, 96}, dt, rng, 4.0f, 2.0f);
    auto w = random_tensor({96}, dt, rng, 1.0f, 0.1f);
    auto b = random_tensor({96}, dt, rng, 0.0f, 0.1f);
    EXPECT_EQ(check_against(ops::layer_norm(x.t, 1e-6f), layer_norm_ref(x.v, 96, 1e-6, nullptr, nullptr),
                            rounding_limit(dt)),
              "");
    EXPECT_EQ(check_against(ops::layer_norm(x.t, 1e-5f, w.t, b.t), layer_norm_ref(x.v, 96, 1e-5, w.v.data(), b.v.data()),
                            rounding_limit(dt)),
              "");
  }
}

TEST(OpsNorm, RmsNormWithAndWithoutWeight) {
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  for (DType dt : kFloatDTypes) {
    SCOPED_TRACE(std::string(dtype_name(dt)) + " seed " + std::to_string(seed));
    auto x = random_tensor({5, 128}, dt, rng, 0.5f, 3.0f);
    auto w = random_tensor({128}, dt, rng, 1.0f, 0.1f);
    EXPECT_EQ(check_against(ops::rms_norm(x.t, 1e-6f), rms_norm_ref(x.v, 128, 1e-6, nullptr), rounding_limit(dt)), "");
    EXPECT_EQ(check_against(ops::rms_norm(x.t, 1e-6f, w.t), rms_norm_ref(x.v, 128, 1e-6, w.v.data()), rounding_limit(dt)),
              "");
  }
}

TEST(OpsNorm, EpsMattersForSmallRows) {
  // A row of tiny values: the result depends on eps, so a dropped eps shows.
  std::vector<float> tiny(16, 1e-4f);
  tiny[0] = -1e-4f;
  Tensor x = Tensor::from_f32(tiny, {1, 16});
  std::vector<double> xv(tiny.begin(), tiny.end());
  EXPECT_EQ(check_against(ops::rms_norm(x, 1e-6f), rms_norm_ref(xv, 16, 1e-6, nullptr), 1e-6), "");
  EXPECT_EQ(check_against(ops::layer_norm(x, 1e-6f), layer_norm_ref(xv, 16, 1e-6, nullptr, nullptr), 1e-6), "");
}

// The fused norm and rotation, in HunyuanVideo-1.5's form (per head) and Wan's (across heads, rotated
// per head), with arbitrary tables so the cos and sin columns it reads are pinned down.
TEST(OpsNorm, RmsNormRopeMatchesFloat64) {
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  struct Form {
    std::int64_t g, n, dr;
  };
  for (const Form f : {Form{3, 16, 16}, Form{1, 48, 16}})
    for (DType dt : kFloatDTypes)
      for (bool weighted : {false, true}) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + " G " + std::to_string(f.g) + " N " + std::to_string(f.n) +
                     " seed " + std::to_string(seed));
        const std::int64_t s = 5;
        auto x = random_tensor({2, s, f.g, f.n}, dt, rng, 0.5f, 3.0f);
        auto w = random_tensor({f.n}, dt, rng, 1.0f, 0.1f);
        auto c = random_tensor({s, f.dr}, DType::F32, rng);
        auto sn = random_tensor({s, f.dr}, DType::F32, rng);
        const Tensor y = ops::rms_norm_rope_interleaved(x.t, 1e-6f, weighted ? w.t : Tensor(), c.t, sn.t);
        const auto ref = norm_rope_ref(x.v, s, f.g, f.n, 1e-6, weighted ? w.v.data() : nullptr, c.v, sn.v, f.dr);
        // One rounding to the storage dtype after float32 arithmetic on |x| up to a few units.
        EXPECT_EQ(check_against(y, ref, rounding_limit(dt)), "");
      }
}

TEST(OpsNorm, RmsNormRopeArgumentErrors) {
  Tensor x = Tensor::zeros({1, 3, 2, 12}, DType::F32);
  const Tensor t8 = Tensor::zeros({3, 8}, DType::F32), t6 = Tensor::zeros({3, 6}, DType::F32);
  EXPECT_EQ(ops::rms_norm_rope_interleaved(x, 1e-6f, Tensor(), t6, t6).shape(), x.shape());
  EXPECT_EQ(user_error([&] { ops::rms_norm_rope_interleaved(x, 1e-6f, Tensor(), t8, t8); }),
            "rms_norm_rope_interleaved: cos [3,8] fp32 cpu and x [1,3,2,12] fp32 cpu: the rotary width "
            "(cos.dim(1)) must be even and divide x's last dimension");
  EXPECT_EQ(user_error([&] { ops::rms_norm_rope_interleaved(x, 1e-6f, Tensor(), Tensor::zeros({4, 6}, DType::F32), t6); }),
            "rms_norm_rope_interleaved: cos [4,6] fp32 cpu: expected shape [3,6]");
  EXPECT_EQ(user_error([&] { ops::rms_norm_rope_interleaved(x.reshape({3, 2, 12}), 1e-6f, Tensor(), t6, t6); }),
            "rms_norm_rope_interleaved: x [3,2,12] fp32 cpu: expected 4 dimensions [B, S, G, N]");
}

TEST(OpsNorm, ArgumentErrors) {
  Tensor x = Tensor::zeros({2, 8}, DType::F32);
  EXPECT_EQ(user_error([&] { ops::layer_norm(x, 1e-6f, Tensor::zeros({8}, DType::F32)); }),
            "layer_norm: weight and bias must be given together (or neither)");
  EXPECT_EQ(user_error([&] { ops::rms_norm(x, 1e-6f, Tensor::zeros({7}, DType::F32)); }),
            "rms_norm: weight [7] fp32 cpu: expected shape [8]");
}

}  // namespace
}  // namespace dattn::testing
