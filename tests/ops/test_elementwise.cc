// add / mul with trailing broadcast, and the per-token modulation ops (adaLN layer norm, gated
// residual), against float64 references.
#include <cmath>

#include <gtest/gtest.h>

#include "dattn/ops/elementwise.h"
#include "dattn/ops/modulation.h"
#include "dattn/ops/norm.h"
#include "ops/op_test_util.h"

namespace dattn::testing {
namespace {

// Float64 reference of a broadcast binary op, by explicit multi-indices.
template <class F>
std::vector<double> broadcast_ref(const RandomTensor& a, const RandomTensor& b, const Shape& out, F f) {
  const auto at = [&](const RandomTensor& t, const std::vector<std::int64_t>& idx) {
    const Shape& s = t.t.shape();
    std::int64_t off = 0;
    for (std::size_t i = 0; i < s.size(); ++i) off = off * s[i] + (s[i] == 1 ? 0 : idx[idx.size() - s.size() + i]);
    return t.v[off];
  };
  std::vector<double> y(shape_numel(out));
  std::vector<std::int64_t> idx(out.size(), 0);
  for (std::size_t n = 0; n < y.size(); ++n) {
    y[n] = f(at(a, idx), at(b, idx));
    for (int d = static_cast<int>(out.size()) - 1; d >= 0 && ++idx[d] == out[d]; --d) idx[d] = 0;
  }
  return y;
}

TEST(OpsElementwise, AddAndMulBroadcast) {
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{3, 6, 8}, {3, 6, 8}}, {{3, 6, 8}, {6, 8}}, {{3, 6, 8}, {1, 6, 8}}, {{3, 6, 8}, {8}},
      {{1, 2, 8}, {3, 1, 8}},  // Wan's output modulation: table [1, 2, D] + temb [R, 1, D]
      {{3, 1, 8}, {1, 4, 1}}, {{5}, {2, 1}}};
  for (DType dt : kFloatDTypes)
    for (const auto& [as, bs] : cases) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " " + shape_str(as) + " op " + shape_str(bs) + " seed " +
                   std::to_string(seed));
      auto a = random_tensor(as, dt, rng);
      auto b = random_tensor(bs, DType::F32, rng);
      const Shape out = *ops::broadcast_shape(as, bs);
      const auto sum = broadcast_ref(a, b, out, [](double x, double y) { return x + y; });
      const auto prod = broadcast_ref(a, b, out, [](double x, double y) { return x * y; });
      Tensor s = ops::add(a.t, b.t);
      EXPECT_EQ(s.shape(), out);
      EXPECT_EQ(check_against(s, sum, rounding_limit(dt)), "");
      EXPECT_EQ(check_against(ops::mul(a.t, b.t), prod, rounding_limit(dt)), "");
      Tensor wide = ops::add(a.t, b.t, DType::F32);  // the output dtype is the caller's
      EXPECT_EQ(wide.dtype(), DType::F32);
      EXPECT_EQ(check_against(wide, sum, 1e-7), "");
    }
  Tensor a = Tensor::zeros({3, 6, 8}, DType::F32);
  EXPECT_EQ(user_error([&] { ops::add(a, Tensor::zeros({6, 7}, DType::F32)); }),
            "add: a [3,6,8] fp32 cpu and b [6,7] fp32 cpu do not broadcast");
}

// Two batch items of 5 tokens, modulation rows shared by some tokens (as with per-token timesteps).
struct ModCase {
  RandomTensor x, y, params;
  ops::TokenModulation m;
};

ModCase make_mod_case(DType dt, std::mt19937_64& rng) {
  ModCase c;
  c.x = random_tensor({2, 5, 64}, dt, rng, 1.0f, 2.0f);
  c.y = random_tensor({2, 5, 64}, dt, rng);
  c.params = random_tensor({3, 6, 64}, DType::F32, rng, 0.0f, 0.5f);
  c.m.params = c.params.t;
  c.m.row_of_token = {0, 0, 1, 1, 1, 2, 2, 2, 2, 0};
  return c;
}

TEST(OpsModulation, LayerNormModulatedAndGatedResidual) {
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  for (DType dt : kFloatDTypes) {
    SCOPED_TRACE(std::string(dtype_name(dt)) + " seed " + std::to_string(seed));
    ModCase c = make_mod_case(dt, rng);
    const std::int64_t d = 64;
    std::vector<double> norm(c.x.v.size()), resid(c.x.v.size());
    for (std::int64_t t = 0; t < 10; ++t) {
      const double* p = c.params.v.data() + c.m.row_of_token[t] * 6 * d;
      const double* in = c.x.v.data() + t * d;
      double mean = 0, var = 0;
      for (std::int64_t i = 0; i < d; ++i) mean += in[i] / d;
      for (std::int64_t i = 0; i < d; ++i) var += (in[i] - mean) * (in[i] - mean) / d;
      for (std::int64_t i = 0; i < d; ++i) {
        // shift is vector 3, scale vector 4, gate vector 5 (the FFN half of a Wan block)
        norm[t * d + i] = (in[i] - mean) / std::sqrt(var + 1e-6) * (1 + p[4 * d + i]) + p[3 * d + i];
        resid[t * d + i] = in[i] + c.y.v[t * d + i] * p[5 * d + i];
      }
    }
    EXPECT_EQ(check_against(ops::layer_norm_modulated(c.x.t, 1e-6f, c.m, 3, 4), norm, rounding_limit(dt)), "");
    EXPECT_EQ(check_against(ops::gated_residual(c.x.t, c.y.t, c.m, 5), resid, rounding_limit(dt)), "");
  }
}

// The fused form on the CPU is the two ops: the same values exactly, gated and plain.
TEST(OpsModulation, ResidualLayerNormModulatedIsTheTwoOps) {
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  for (DType dt : kFloatDTypes) {
    SCOPED_TRACE(std::string(dtype_name(dt)) + " seed " + std::to_string(seed));
    ModCase c = make_mod_case(dt, rng);
    const auto gated = ops::residual_layer_norm_modulated(c.x.t, c.y.t, &c.m, 5, 1e-6f, c.m, 3, 4);
    const Tensor resid = ops::gated_residual(c.x.t, c.y.t, c.m, 5);
    EXPECT_EQ(gated.residual.to_f64_vector(), resid.to_f64_vector());
    EXPECT_EQ(gated.normed.to_f64_vector(), ops::layer_norm_modulated(resid, 1e-6f, c.m, 3, 4).to_f64_vector());
    const auto plain = ops::residual_layer_norm_modulated(c.x.t, c.y.t, nullptr, 0, 1e-6f, c.m, 0, 1);
    const Tensor sum = ops::add(c.x.t, c.y.t);
    EXPECT_EQ(plain.residual.to_f64_vector(), sum.to_f64_vector());
    EXPECT_EQ(plain.normed.to_f64_vector(), ops::layer_norm_modulated(sum, 1e-6f, c.m, 0, 1).to_f64_vector());
  }
  std::mt19937_64 rng2(2);
  ModCase c = make_mod_case(DType::F32, rng2);
  EXPECT_EQ(user_error([&] { ops::residual_layer_norm_modulated(c.x.t, c.y.t, &c.m, 6, 1e-6f, c.m, 3, 4); }),
            "residual_layer_norm_modulated: vector index 6 outside params [3,6,64] fp32 cpu");
  const Tensor wrong = Tensor::zeros({2, 5, 32}, DType::F32);
  EXPECT_NE(user_error([&] { ops::residual_layer_norm_modulated(c.x.t, wrong, nullptr, 0, 1e-6f, c.m, 3, 4); })
                .find("residual_layer_norm_modulated"),
            std::string::npos);
}

// The fused gated residual + affine layer norm on the CPU is the two ops, and its arguments are checked.
TEST(OpsModulation, ResidualLayerNormIsTheTwoOps) {
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  for (DType dt : kFloatDTypes) {
    SCOPED_TRACE(std::string(dtype_name(dt)) + " seed " + std::to_string(seed));
    ModCase c = make_mod_case(dt, rng);
    const auto w = random_tensor({64}, dt, rng, 1.0f, 0.2f), b = random_tensor({64}, dt, rng);
    const auto gated = ops::residual_layer_norm(c.x.t, c.y.t, &c.m, 2, 1e-6f, w.t, b.t);
    const Tensor resid = ops::gated_residual(c.x.t, c.y.t, c.m, 2);
    EXPECT_EQ(gated.residual.to_f64_vector(), resid.to_f64_vector());
    EXPECT_EQ(gated.normed.to_f64_vector(), ops::layer_norm(resid, 1e-6f, w.t, b.t).to_f64_vector());
    const auto plain = ops::residual_layer_norm(c.x.t, c.y.t, nullptr, 0, 1e-6f, Tensor(), Tensor());
    const Tensor sum = ops::add(c.x.t, c.y.t);
    EXPECT_EQ(plain.residual.to_f64_vector(), sum.to_f64_vector());
    EXPECT_EQ(plain.normed.to_f64_vector(), ops::layer_norm(sum, 1e-6f, Tensor(), Tensor()).to_f64_vector());
  }
  std::mt19937_64 rng2(2);
  ModCase c = make_mod_case(DType::F32, rng2);
  const Tensor w = Tensor::zeros({64}, DType::F32), short_w = Tensor::zeros({32}, DType::F32);
  EXPECT_EQ(user_error([&] { ops::residual_layer_norm(c.x.t, c.y.t, &c.m, 6, 1e-6f, w, w); }),
            "residual_layer_norm: vector index 6 outside params [3,6,64] fp32 cpu");
  EXPECT_EQ(user_error([&] { ops::residual_layer_norm(c.x.t, c.y.t, &c.m, 2, 1e-6f, w, Tensor()); }),
            "residual_layer_norm: weight and bias must be given together (or neither)");
  EXPECT_NE(user_error([&] { ops::residual_layer_norm(c.x.t, c.y.t, &c.m, 2, 1e-6f, short_w, short_w); })
                .find("residual_layer_norm: weight [32]"),
            std::string::npos);
  EXPECT_NE(user_error([&] { ops::residual_layer_norm(c.x.t, c.y.t, &c.m, 2, -1.0f, w, w); }).find("eps"),
            std::string::npos);
}

TEST(OpsModulation, BadRowsAndIndicesAreErrors) {
  std::mt19937_64 rng(1);
  ModCase c = make_mod_case(DType::F32, rng);
  c.m.row_of_token[3] = 7;
  EXPECT_EQ(user_error([&] { ops::gated_residual(c.x.t, c.y.t, c.m, 5); }),
            "gated_residual: token row 7 outside params [3,6,64] fp32 cpu");
  c.m.row_of_token.pop_back();
  EXPECT_EQ(user_error([&] { ops::layer_norm_modulated(c.x.t, 1e-6f, c.m, 0, 1); }),
            "layer_norm_modulated: 9 token rows for 10 tokens of x [2,5,64] fp32 cpu");
  c.m.row_of_token.push_back(0);
  c.m.row_of_token[3] = 0;
  EXPECT_EQ(user_error([&] { ops::layer_norm_modulated(c.x.t, 1e-6f, c.m, 0, 6); }),
            "layer_norm_modulated: vector index 6 outside params [3,6,64] fp32 cpu");
}

}  // namespace
}  // namespace dattn::testing
