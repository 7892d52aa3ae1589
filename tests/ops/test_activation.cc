// gelu_tanh, gelu (erf) and silu against float64 references, including large |x| where exp/tanh saturate.
#include <cmath>

#include <gtest/gtest.h>

#include "dattn/ops/activation.h"
#include "ops/op_test_util.h"

namespace dattn::testing {
namespace {

template <class F>
std::vector<double> map_ref(const std::vector<double>& x, F f) {
  std::vector<double> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = f(x[i]);
  return y;
}

double gelu_tanh_ref(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}
double gelu_ref(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double silu_ref(double x) { return x / (1.0 + std::exp(-x)); }

TEST(OpsActivation, GelusAndSiluMatchFloat64) {
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  for (DType dt : kFloatDTypes) {
    SCOPED_TRACE(std::string(dtype_name(dt)) + " seed " + std::to_string(seed));
    auto x = random_tensor({4, 333}, dt, rng, 0.0f, 4.0f);
    EXPECT_EQ(check_against(ops::gelu_tanh(x.t), map_ref(x.v, gelu_tanh_ref), rounding_limit(dt)), "");
    EXPECT_EQ(check_against(ops::gelu(x.t), map_ref(x.v, gelu_ref), rounding_limit(dt)), "");
    EXPECT_EQ(check_against(ops::silu(x.t), map_ref(x.v, silu_ref), rounding_limit(dt)), "");
  }
}

TEST(OpsActivation, SaturatesWithoutNaN) {
  std::vector<float> v = {-1e4f, -100.0f, -20.0f, 0.0f, 20.0f, 100.0f, 1e4f};
  Tensor x = Tensor::from_f32(v, {7});
  std::vector<double> xv(v.begin(), v.end());
  EXPECT_EQ(check_against(ops::gelu_tanh(x), map_ref(xv, gelu_tanh_ref), 1e-6), "");
  EXPECT_EQ(check_against(ops::gelu(x), map_ref(xv, gelu_ref), 1e-6), "");
  EXPECT_EQ(check_against(ops::silu(x), map_ref(xv, silu_ref), 1e-6), "");
}

}  // namespace
}  // namespace dattn::testing
