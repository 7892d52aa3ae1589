// linear against a float64 reference: every dtype, with and without bias, mixed operand dtypes, and
// the argument errors.
#include <gtest/gtest.h>

#include "dattn/ops/activation.h"
#include "dattn/ops/linear.h"
#include "ops/op_test_util.h"

namespace dattn::testing {
namespace {

std::vector<double> linear_ref(const RandomTensor& x, const RandomTensor& w, const RandomTensor* b, std::int64_t in,
                               std::int64_t out) {
  const std::int64_t rows = static_cast<std::int64_t>(x.v.size()) / in;
  std::vector<double> y(rows * out);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t o = 0; o < out; ++o) {
      double s = b ? b->v[o] : 0.0;
      for (std::int64_t i = 0; i < in; ++i) s += x.v[r * in + i] * w.v[o * in + i];
      y[r * out + o] = s;
    }
  return y;
}

TEST(OpsLinear, MatchesFloat64ReferenceInEveryDtype) {
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  for (DType dt : kFloatDTypes)
    for (bool with_bias : {true, false}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + (with_bias ? " bias" : " no bias") + " seed " + std::to_string(seed));
      auto x = random_tensor({2, 5, 37}, dt, rng);
      auto w = random_tensor({19, 37}, dt, rng, 0.0f, 0.2f);
      auto b = random_tensor({19}, dt, rng);
      Tensor y = ops::linear(x.t, w.t, with_bias ? b.t : Tensor());
      EXPECT_EQ(y.shape(), (Shape{2, 5, 19}));
      EXPECT_EQ(y.dtype(), dt);
      EXPECT_EQ(check_against(y, linear_ref(x, w, with_bias ? &b : nullptr, 37, 19), rounding_limit(dt)), "");
    }
}

// On the CPU the fused form is the two ops: the same values exactly.
TEST(OpsLinear, LinearGeluTanhIsGeluOfLinear) {
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  for (DType dt : kFloatDTypes) {
    SCOPED_TRACE(std::string(dtype_name(dt)) + " seed " + std::to_string(seed));
    auto x = random_tensor({3, 41}, dt, rng);
    auto w = random_tensor({23, 41}, dt, rng, 0.0f, 0.3f);
    auto b = random_tensor({23}, dt, rng);
    EXPECT_EQ(ops::linear_gelu_tanh(x.t, w.t, b.t).to_f64_vector(),
              ops::gelu_tanh(ops::linear(x.t, w.t, b.t)).to_f64_vector());
    EXPECT_EQ(ops::linear_gelu_tanh(x.t, w.t).to_f64_vector(), ops::gelu_tanh(ops::linear(x.t, w.t)).to_f64_vector());
  }
  EXPECT_NE(user_error([&] { ops::linear_gelu_tanh(Tensor::zeros({2, 4}, DType::F32), Tensor::zeros({3, 5}, DType::F32)); })
                .find("linear_gelu_tanh"),
            std::string::npos);
}

TEST(OpsLinear, MixedDtypesAndLargeInnerDimension) {
  std::mt19937_64 rng(test::fresh_seed());
  // A bf16 activation with float32 weights (diffusers keeps some modules in float32) gives bf16 out.
  auto x = random_tensor({3, 1024}, DType::BF16, rng);
  auto w = random_tensor({7, 1024}, DType::F32, rng, 0.0f, 0.03f);
  auto b = random_tensor({7}, DType::F32, rng);
  Tensor y = ops::linear(x.t, w.t, b.t);
  EXPECT_EQ(y.dtype(), DType::BF16);
  EXPECT_EQ(check_against(y, linear_ref(x, w, &b, 1024, 7), rounding_limit(DType::BF16)), "");
  auto xf = random_tensor({64, 4096}, DType::F32, rng);
  auto wf = random_tensor({33, 4096}, DType::F32, rng, 0.0f, 0.02f);
  EXPECT_EQ(check_against(ops::linear(xf.t, wf.t), linear_ref(xf, wf, nullptr, 4096, 33), 1e-5), "");
}

TEST(OpsLinear, ArgumentErrorsNameTheArgument) {
  Tensor x = Tensor::zeros({2, 8}, DType::F32), w = Tensor::zeros({4, 8}, DType::F32);
  EXPECT_EQ(user_error([&] { ops::linear(x, Tensor::zeros({4, 6}, DType::F32)); }),
            "linear: x [2,8] fp32 cpu does not end in in_features = 6 of weight [4,6] fp32 cpu");
  EXPECT_EQ(user_error([&] { ops::linear(x, w, Tensor::zeros({5}, DType::F32)); }),
            "linear: bias [5] fp32 cpu: expected shape [4]");
  EXPECT_EQ(user_error([&] { ops::linear(Tensor::zeros({2, 8}, DType::I8), w); }),
            "linear: x [2,8] int8 cpu: expected dtype fp32, bf16 or fp16");
  EXPECT_EQ(user_error([&] { ops::linear(x, Tensor::zeros({32}, DType::F32)); }),
            "linear: weight [32] fp32 cpu: expected 2 dimensions [out, in]");
}

}  // namespace
}  // namespace dattn::testing
