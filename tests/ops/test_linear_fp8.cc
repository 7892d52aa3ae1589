// FP8 linear on the CPU (the emulation of the CUDA path): the per-row e4m3 quantization against the e4m3
// grid built from its definition, the linear against a float64 evaluation of the quantized math, and
// the quantization error against the unquantized linear.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "dattn/ops/linear.h"
#include "dattn/ops/linear_fp8.h"
#include "ops/fp8_test_util.h"
#include "ops/op_test_util.h"

namespace dattn::testing {
namespace {

using ops::Fp8Matrix;

std::vector<float> floats_of(const Tensor& t) {
  const std::vector<double> d = t.to(Device::CPU).to_f64_vector();
  return std::vector<float>(d.begin(), d.end());
}

TEST(OpsLinearFp8, QuantizedRowsAreTheNearestGridValuesOfXOverTheScale) {
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  for (DType dt : kFloatDTypes)
    for (float stddev : {1e-3f, 1.0f, 50.0f}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " stddev " + std::to_string(stddev) + " seed " + std::to_string(seed));
      const RandomTensor x = random_tensor({5, 37}, dt, rng, 0.0f, stddev);
      const Fp8Matrix q = ops::quantize_rows_e4m3(x.t);
      ASSERT_EQ(q.values.shape(), (Shape{16, 48}));
      ASSERT_EQ(q.scales.shape(), (Shape{5}));
      const RefRows ref = quantize_ref(floats_of(x.t), 5, 37);
      EXPECT_EQ(codes_of(q), ref.codes);
      EXPECT_EQ(floats_of(q.scales), ref.scales);
      const auto* p = q.values.data_as<std::uint8_t>();
      for (std::int64_t i = 0; i < 16; ++i)
        for (std::int64_t j = 0; j < 48; ++j)
          if (i >= 5 || j >= 37) {
            ASSERT_EQ(p[i * 48 + j], 0) << "padding at " << i << ", " << j;
          }
      // The element of largest magnitude lands on +-448.
      for (std::int64_t i = 0; i < 5; ++i) {
        int top = 0;
        for (std::int64_t j = 0; j < 37; ++j) top = std::max(top, p[i * 48 + j] & 0x7F);
        EXPECT_EQ(top, 0x7E) << "row " << i;
      }
    }
}

// A row whose amax is 448 has scale 1: the quantizer is then the bare e4m3 conversion.
TEST(OpsLinearFp8, EveryCodeRoundTripsAndMidpointsRoundToEven) {
  std::vector<float> codes_row, mid_row;
  std::vector<std::uint8_t> want_codes, want_mid;
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7F) == 0x7F) continue;  // NaN
    codes_row.push_back(static_cast<float>(e4m3_value(std::uint8_t(c))));
    want_codes.push_back(std::uint8_t(c));
  }
  for (int c = 0; c < 0x7E; ++c) {  // between c and c + 1: the even one of the two codes
    mid_row.push_back(static_cast<float>((e4m3_value(std::uint8_t(c)) + e4m3_value(std::uint8_t(c + 1))) / 2));
    want_mid.push_back(std::uint8_t(c % 2 ? c + 1 : c));
  }
  mid_row.push_back(448.0f);
  want_mid.push_back(0x7E);
  mid_row.resize(codes_row.size(), 0.0f);  // both rows of one width
  want_mid.resize(codes_row.size(), 0);
  std::vector<float> both = codes_row;
  both.insert(both.end(), mid_row.begin(), mid_row.end());
  const auto k = static_cast<std::int64_t>(codes_row.size());
  const Fp8Matrix q = ops::quantize_rows_e4m3(Tensor::from_f32(both, {2, k}));
  EXPECT_EQ(floats_of(q.scales), (std::vector<float>{1.0f, 1.0f}));
  const std::vector<std::uint8_t> got = codes_of(q);
  EXPECT_EQ(std::vector<std::uint8_t>(got.begin(), got.begin() + k), want_codes);
  EXPECT_EQ(std::vector<std::uint8_t>(got.begin() + k, got.end()), want_mid);
}

TEST(OpsLinearFp8, ZeroNanAndInfRows) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {0, 0, 0, 0,  1, -nan, 2, -448,  1, inf, 2, 3,  -1, 0.5f, 2, 4};
  const Fp8Matrix q = ops::quantize_rows_e4m3(Tensor::from_f32(x, {4, 4}));
  const std::vector<float> s = floats_of(q.scales);
  EXPECT_EQ(s[0], 1.0f);  // zero row: scale 1, codes 0
  EXPECT_EQ(s[1], 1.0f);  // NaN is not the amax: 448 is
  EXPECT_EQ(s[2], inf);
  EXPECT_EQ(s[3], 4.0f / 448.0f);
  const std::vector<std::uint8_t> c = codes_of(q);
  EXPECT_EQ((std::vector<std::uint8_t>(c.begin(), c.begin() + 8)),
            (std::vector<std::uint8_t>{0, 0, 0, 0, 0x38, 0x7F, 0x40, 0xFE}));  // NaN: 0x7F whatever its sign
  EXPECT_EQ(c[9], 0x7F);  // Inf / Inf
  // The linear: rows holding NaN or Inf are NaN throughout, the others finite.
  const std::vector<float> w = {1, 2, 3, 4, -1, 0, 0.25f, 1};
  const Fp8Matrix wq = ops::quantize_rows_e4m3(Tensor::from_f32(w, {2, 4}));
  const std::vector<double> y = ops::linear_fp8(Tensor::from_f32(x, {4, 4}), wq).to_f64_vector();
  for (int n = 0; n < 2; ++n) {
    EXPECT_EQ(y[n], 0.0);
    EXPECT_TRUE(std::isnan(y[2 + n]));
    EXPECT_TRUE(std::isnan(y[4 + n]));
    EXPECT_TRUE(std::isfinite(y[6 + n]));
  }
}

struct Fp8Case {
  Shape x;
  std::int64_t out;
};
// Odd sizes (nothing a multiple of 16: padded), a 3-D input, one row, exact multiples of 16.
const Fp8Case kFp8Cases[] = {{{5, 37}, 19}, {{2, 8, 64}, 48}, {{1, 16}, 16}, {{33, 100}, 7}};

TEST(OpsLinearFp8, MatchesFloat64OfTheQuantizedValues) {
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  for (const auto& c : kFp8Cases)
    for (DType dt : kFloatDTypes)
      for (bool with_bias : {true, false})
        for (bool gelu : {false, true}) {
          SCOPED_TRACE(shape_str(c.x) + " out " + std::to_string(c.out) + " " + std::string(dtype_name(dt)) +
                       (with_bias ? " bias" : "") + (gelu ? " gelu" : "") + " seed " + std::to_string(seed));
          const std::int64_t in = c.x.back(), rows = shape_numel(c.x) / in;
          const RandomTensor x = random_tensor(c.x, dt, rng);
          const RandomTensor w = random_tensor({c.out, in}, dt, rng, 0.0f, 0.2f);
          const RandomTensor b = random_tensor({c.out}, dt, rng);
          const Fp8Matrix wq = ops::quantize_rows_e4m3(w.t);
          const Tensor bias = with_bias ? b.t : Tensor();
          const Tensor y = gelu ? ops::linear_fp8_gelu_tanh(x.t, wq, bias) : ops::linear_fp8(x.t, wq, bias);
          Shape want = c.x;
          want.back() = c.out;
          ASSERT_EQ(y.shape(), want);
          ASSERT_EQ(y.dtype(), dt);
          const RefRows xr = quantize_ref(floats_of(x.t), rows, in);
          std::vector<double> ref = linear_fp8_ref(xr.codes, xr.scales, codes_of(wq), floats_of(wq.scales),
                                                   with_bias ? &b.v : nullptr, rows, in, c.out);
          if (gelu)
            for (double& v : ref) v = gelu_tanh_f64(v);
          // float32: the GEMM's summation order and the epilogue's roundings; 16-bit: one rounding.
          EXPECT_EQ(check_against(y, ref, dt == DType::F32 ? 2e-6 : rounding_limit(dt)), "");
        }
}

// What FP8 costs on random data: x ~ N(0, 1), w ~ N(0, 0.05), bias ~ N(0, 1) at a transformer-like width.
TEST(OpsLinearFp8, QuantizationErrorAgainstTheUnquantizedLinear) {
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  const std::int64_t rows = 256, in = 512, out = 384;
  const RandomTensor x = random_tensor({rows, in}, DType::F32, rng);
  const RandomTensor w = random_tensor({out, in}, DType::F32, rng, 0.0f, 0.05f);
  const RandomTensor b = random_tensor({out}, DType::F32, rng);
  std::vector<double> exact(static_cast<std::size_t>(rows * out)), exact_nob(exact.size());
  for (std::int64_t m = 0; m < rows; ++m)
    for (std::int64_t n = 0; n < out; ++n) {
      double s = 0;
      for (std::int64_t k = 0; k < in; ++k) s += x.v[m * in + k] * w.v[n * in + k];
      exact_nob[m * out + n] = s;
      exact[m * out + n] = s + b.v[n];
    }
  const Fp8Matrix wq = ops::quantize_rows_e4m3(w.t);
  ErrorStats nob, withb;
  EXPECT_EQ(check_against(ops::linear_fp8(x.t, wq), exact_nob, 0.05, &nob), "");
  EXPECT_EQ(check_against(ops::linear_fp8(x.t, wq, b.t), exact, 0.05, &withb), "");
  std::printf("[ fp8 ] %lldx%lld · %lldx%lld random: rel L2 %.4f without bias, %.4f with bias (seed %llu)\n",
              (long long)rows, (long long)in, (long long)out, (long long)in, nob.rel_l2, withb.rel_l2,
              (unsigned long long)seed);
  // e4m3 keeps 3 mantissa bits: each operand is off by ~2.5% rms, a product by ~3.5%, and the dot
  // product's errors average like its terms. Below 1% would mean the quantization did not happen.
  EXPECT_GT(nob.rel_l2, 0.01);
}

TEST(OpsLinearFp8, EmptyShapesAndKZero) {
  const Fp8Matrix wq = ops::quantize_rows_e4m3(Tensor::zeros({3, 0}, DType::F32));
  EXPECT_EQ(wq.rows, 3);
  EXPECT_EQ(wq.values.shape(), (Shape{16, 0}));
  const Tensor bias = Tensor::from_f32({1, 2, 3}, {3});
  EXPECT_EQ(ops::linear_fp8(Tensor::zeros({2, 0}, DType::F32), wq, bias).to_f64_vector(),
            (std::vector<double>{1, 2, 3, 1, 2, 3}));
  const Fp8Matrix w2 = ops::quantize_rows_e4m3(Tensor::from_f32({1, 2}, {1, 2}));
  EXPECT_EQ(ops::linear_fp8(Tensor::zeros({0, 2}, DType::BF16), w2).shape(), (Shape{0, 1}));
}

TEST(OpsLinearFp8, MismatchedInputsAreUserErrors) {
  const Fp8Matrix wq = ops::quantize_rows_e4m3(Tensor::from_f32({1, 2, 3, 4}, {2, 2}));
  EXPECT_NE(user_error([&] { ops::linear_fp8(Tensor::zeros({1, 3}, DType::F32), wq); }).find("in_features = 2"),
            std::string::npos);
  EXPECT_NE(user_error([&] { ops::linear_fp8(Tensor::zeros({1, 2}, DType::F32), Fp8Matrix{}); })
                .find("not a quantize_rows_e4m3 matrix"),
            std::string::npos);
  EXPECT_NE(user_error([&] { ops::linear_fp8(Tensor::zeros({1, 2}, DType::F32), wq, Tensor::zeros({3}, DType::F32)); })
                .find("bias"),
            std::string::npos);
}

// An activation quantized once and read by several linears gives each the bytes of its own call on x,
// and LinearInput quantizes on the first FP8 use only.
TEST(OpsLinearFp8, ASharedQuantizedActivationEqualsEachLinearOfX) {
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  for (DType dt : kFloatDTypes) {
    SCOPED_TRACE(std::string(dtype_name(dt)) + " seed " + std::to_string(seed));
    const RandomTensor x = random_tensor({2, 5, 24}, dt, rng);
    const RandomTensor w1 = random_tensor({40, 24}, dt, rng, 0.0f, 0.05f), w2 = random_tensor({7, 24}, dt, rng);
    const RandomTensor b = random_tensor({40}, dt, rng);
    const Fp8Matrix q1 = ops::quantize_rows_e4m3(w1.t), q2 = ops::quantize_rows_e4m3(w2.t);
    const ops::LinearInput in(x.t);
    const Tensor y1 = ops::linear_fp8(in.fp8(), q1, b.t), y2 = ops::linear_fp8_gelu_tanh(in.fp8(), q2);
    const ops::Fp8Activation direct = ops::quantize_activation(x.t);
    EXPECT_EQ(in.fp8().shape, (Shape{2, 5, 24}));
    EXPECT_EQ(in.fp8().rows.values.to_f64_vector(), direct.rows.values.to_f64_vector());
    EXPECT_EQ(in.fp8().rows.scales.to_f64_vector(), direct.rows.scales.to_f64_vector());
    EXPECT_EQ(y1.shape(), (Shape{2, 5, 40}));
    EXPECT_EQ(y1.dtype(), dt);
    EXPECT_EQ(y1.to_f64_vector(), ops::linear_fp8(x.t, q1, b.t).to_f64_vector());
    EXPECT_EQ(y2.to_f64_vector(), ops::linear_fp8_gelu_tanh(x.t, q2).to_f64_vector());
  }
}

TEST(OpsLinearFp8, TheQuantizedGeluOutputIsTheQuantizationOfTheGeluLinear) {
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  for (DType dt : kFloatDTypes) {
    SCOPED_TRACE(std::string(dtype_name(dt)) + " seed " + std::to_string(seed));
    const RandomTensor x = random_tensor({3, 24}, dt, rng);
    const Fp8Matrix w1 = ops::quantize_rows_e4m3(random_tensor({40, 24}, dt, rng, 0.0f, 0.05f).t);
    const Fp8Matrix w2 = ops::quantize_rows_e4m3(random_tensor({8, 40}, dt, rng, 0.0f, 0.05f).t);
    const Tensor b1 = random_tensor({40}, dt, rng).t, b2 = random_tensor({8}, dt, rng).t;
    const ops::Fp8Activation h = ops::linear_fp8_gelu_tanh_quantized(ops::quantize_activation(x.t), w1, b1);
    const ops::Fp8Activation want = ops::quantize_activation(ops::linear_fp8_gelu_tanh(x.t, w1, b1));
    EXPECT_EQ(h.shape, want.shape);
    EXPECT_EQ(h.dtype, dt);
    EXPECT_EQ(h.rows.values.to_f64_vector(), want.rows.values.to_f64_vector());
    EXPECT_EQ(h.rows.scales.to_f64_vector(), want.rows.scales.to_f64_vector());
    EXPECT_EQ(ops::feed_forward_fp8(x.t, w1, b1, w2, b2).to_f64_vector(),
              ops::linear_fp8(ops::linear_fp8_gelu_tanh(x.t, w1, b1), w2, b2).to_f64_vector());
  }
}

TEST(OpsLinearFp8, AMismatchedQuantizedActivationIsAUserError) {
  const Fp8Matrix wq = ops::quantize_rows_e4m3(Tensor::from_f32({1, 2, 3, 4}, {2, 2}));
  const ops::Fp8Activation x3 = ops::quantize_activation(Tensor::zeros({4, 3}, DType::BF16));
  EXPECT_NE(user_error([&] { ops::linear_fp8(x3, wq); }).find("in_features = 2"), std::string::npos);
  ops::Fp8Activation torn = ops::quantize_activation(Tensor::zeros({4, 2}, DType::BF16));
  torn.shape = {5, 2};  // rows that do not match the shape
  EXPECT_NE(user_error([&] { ops::linear_fp8(torn, wq); }).find("[5,2]"), std::string::npos);
  EXPECT_NE(user_error([&] { ops::linear_fp8(ops::Fp8Activation{}, wq); }).find("not a quantize_rows_e4m3 matrix"),
            std::string::npos);
  EXPECT_NE(user_error([&] { ops::quantize_activation(Tensor::from_f32({1}, {})); }).find("no feature dimension"),
            std::string::npos);
}

}  // namespace
}  // namespace dattn::testing
