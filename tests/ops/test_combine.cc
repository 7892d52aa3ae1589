// cast, linear_combination and guidance_combine on the CPU: against float64 references on fresh random
// inputs, the exact rounding each one promises, and the argument checks.
#include <cmath>

#include <gtest/gtest.h>

#include "dattn/ops/combine.h"
#include "ops/op_test_util.h"

namespace dattn::testing {
namespace {

TEST(OpsCombine, LinearCombinationSumsInDoubleAndRoundsOnce) {
  const auto seed = test::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const Shape shape{3, 1001};
  auto a = random_tensor(shape, DType::F32, rng);
  auto b = random_tensor(shape, DType::F32, rng);
  Tensor c = ops::cast(random_tensor(shape, DType::F32, rng).t, DType::F64);
  const std::vector<double> cv = c.to_f64_vector();
  const double ka = 0.7310585786, kb = -1.25e-3, kc = 3.0;
  for (DType out : {DType::F32, DType::F64}) {
    const Tensor got = ops::linear_combination({{ka, a.t}, {kb, b.t}, {kc, c}}, out);
    ASSERT_EQ(got.dtype(), out);
    const std::vector<double> g = got.to_f64_vector();
    for (std::size_t i = 0; i < g.size(); ++i) {
      const double want = ka * a.v[i] + kb * b.v[i] + kc * cv[i];  // the documented order, in double
      if (out == DType::F64)
        ASSERT_EQ(g[i], want) << i;
      else
        ASSERT_EQ(g[i], static_cast<double>(static_cast<float>(want))) << i;
    }
  }
}

TEST(OpsCombine, GuidanceRoundsEveryOperationToFloat32) {
  const auto seed = test::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  auto c = random_tensor({2, 513}, DType::F32, rng), u = random_tensor({2, 513}, DType::F32, rng);
  const float g = 5.0f;
  const std::vector<float> got = ops::guidance_combine(c.t, u.t, g).to_f32_vector();
  const std::vector<float> cf = c.t.to_f32_vector(), uf = u.t.to_f32_vector();
  std::vector<double> ref(got.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    const float diff = cf[i] - uf[i];
    const float scaled = g * diff;
    ASSERT_EQ(got[i], uf[i] + scaled) << i;
    ref[i] = u.v[i] + 5.0 * (c.v[i] - u.v[i]);
  }
  EXPECT_EQ(check_against(ops::guidance_combine(c.t, u.t, g), ref, 1e-6), "");
}

TEST(OpsCombine, CastRoundsToNearestAndKeepsTheDevice) {
  const Tensor x = Tensor::from_f64({1.0 + 0x1.0p-30, -2.5, 1e300}, {3}, DType::F64);
  const Tensor f = ops::cast(x, DType::F32);
  EXPECT_EQ(f.dtype(), DType::F32);
  EXPECT_EQ(f.to_f64_vector()[0], 1.0);
  EXPECT_EQ(f.to_f64_vector()[1], -2.5);
  EXPECT_TRUE(std::isinf(f.to_f64_vector()[2]));
  EXPECT_EQ(ops::cast(f, DType::F32).data(), f.data());  // no copy when the dtype matches
}

TEST(OpsCombine, ArgumentErrorsNameTheOp) {
  const Tensor a = Tensor::zeros({4}, DType::F32), b = Tensor::zeros({5}, DType::F32);
  const Tensor h = Tensor::zeros({4}, DType::BF16);
  EXPECT_NE(user_error([&] { ops::linear_combination({}, DType::F32); }).find("linear_combination: 0 terms"),
            std::string::npos);
  EXPECT_NE(user_error([&] { ops::linear_combination({{1, a}, {1, b}}, DType::F32); }).find("linear_combination"),
            std::string::npos);
  EXPECT_NE(user_error([&] { ops::linear_combination({{1, h}}, DType::F32); }).find("expected fp32 or fp64"),
            std::string::npos);
  EXPECT_NE(user_error([&] { ops::linear_combination({{1, a}}, DType::BF16); }).find("output dtype bf16"),
            std::string::npos);
  EXPECT_NE(user_error([&] { ops::guidance_combine(a, h, 2.0f); }).find("guidance_combine"), std::string::npos);
  EXPECT_NE(user_error([&] { ops::cast(Tensor::zeros({2}, DType::I8), DType::F32); }).find("cast"), std::string::npos);
}

}  // namespace
}  // namespace dattn::testing
