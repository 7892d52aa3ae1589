// FP8 linear on CUDA against the CPU emulation: the quantized bytes and scales bit for bit (padding
// included), then the GEMM + scale epilogue against a float64 evaluation of the same quantized values
// and against the CPU op; odd shapes (padded to 16), bias or not, GELU, NaN/Inf rows, K = 0, a poisoned
// heap, and the bf16 linear's plan cache left alone.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <limits>
#include <random>
#include <vector>

#include "dattn/ops/linear.h"
#include "dattn/ops/linear_fp8.h"
#include "ops/cuda_test_util.h"
#include "ops/fp8_test_util.h"
#ifdef DATTN_WITH_CUDA
#include "ops/cuda/cuda_ops.h"
#include "ops/cuda/linear_fp8.h"
#endif

namespace dattn::testing {
namespace {

using ops::Fp8Matrix;

std::vector<std::uint8_t> bytes_of(const Tensor& t) {
  const Tensor h = t.to(Device::CPU);
  const auto* p = static_cast<const std::uint8_t*>(h.data());
  return std::vector<std::uint8_t>(p, p + h.numel() * dtype_size(h.dtype()));
}

std::vector<float> floats_of(const Tensor& t) {
  const std::vector<double> d = t.to(Device::CPU).to_f64_vector();
  return std::vector<float>(d.begin(), d.end());
}

// Random rows, some scaled far apart (per-token scales matter), one all-zero row.
Tensor rows_for(const Shape& shape, DType dt, std::mt19937_64& rng) {
  RandomTensor x = random_tensor(shape, dt, rng);
  std::vector<float> v(x.v.begin(), x.v.end());
  const std::int64_t k = shape.back(), rows = shape_numel(shape) / k;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = 0; j < k; ++j) v[r * k + j] *= r % 3 == 1 ? 100.0f : (r % 3 == 2 ? 0.01f : 1.0f);
  if (rows > 2)
    for (std::int64_t j = 0; j < k; ++j) v[2 * k + j] = 0.0f;
  return Tensor::from_f32(v, shape, dt);
}

struct Fp8Case {
  Shape x;
  std::int64_t out;
};
// Nothing a multiple of 16 (padded in M, N and K), a 3-D input, one row, round sizes, and a Wan-like
// tile (K = 3072, N = 1536, 100 tokens: the float64 reference stays a second).
// The 8-wide kernels (bf16/fp16 rows of a multiple of 8, outputs of a multiple of 8) and their fallbacks:
// K = 24 pads one chunk of 8 zeros, K = 16400 is past the register-held row of the fast quantization.
const Fp8Case kCases[] = {{{5, 37}, 19},   {{2, 8, 64}, 48},        {{1, 16}, 16}, {{33, 100}, 7},
                          {{3, 24}, 40},   {{2, 16400}, 8},         {{1, 100, 3072}, 1536}};

TEST(OpsCudaLinearFp8, QuantizedBytesAndScalesMatchTheCpuBitForBit) {
  DATTN_SKIP_WITHOUT_CUDA();
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  for (const auto& c : kCases)
    for (DType dt : kFloatDTypes) {
      SCOPED_TRACE(trace(dt, seed, shape_str(c.x)));
      const Tensor x = rows_for(c.x, dt, rng);
      poison_device_heap();
      const Fp8Matrix g = ops::quantize_rows_e4m3(dev(x));
      const Fp8Matrix h = ops::quantize_rows_e4m3(x);
      ASSERT_EQ(g.values.shape(), h.values.shape());
      ASSERT_EQ(g.values.device(), Device::CUDA);
      EXPECT_TRUE(bytes_of(g.values) == bytes_of(h.values)) << "e4m3 bytes differ (padding included)";
      EXPECT_TRUE(bytes_of(g.scales) == bytes_of(h.scales)) << "scales differ";
    }
}

TEST(OpsCudaLinearFp8, NanAndInfQuantizeAsOnTheCpu) {
  DATTN_SKIP_WITHOUT_CUDA();
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {0, 0, 0, 0, 1, -nan, 2, -448, 1, inf, 2, 3, -1, 0.5f, 2, 4, 1e-30f, 0, 0, -1e-30f};
  for (DType dt : kFloatDTypes) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor t = Tensor::from_f32(x, {5, 4}, dt);
    const Fp8Matrix g = ops::quantize_rows_e4m3(dev(t)), h = ops::quantize_rows_e4m3(t);
    EXPECT_TRUE(bytes_of(g.values) == bytes_of(h.values));
    EXPECT_TRUE(bytes_of(g.scales) == bytes_of(h.scales));
    // The linear: NaN wherever the CPU has NaN (the rows holding NaN or Inf), equal elsewhere.
    const Tensor w = Tensor::from_f32({1, 2, 3, 4, -1, 0, 0.25f, 1}, {2, 4}, dt);
    const std::vector<double> yg = ops::linear_fp8(dev(t), ops::quantize_rows_e4m3(dev(w))).to_f64_vector();
    const std::vector<double> yh = ops::linear_fp8(t, ops::quantize_rows_e4m3(w)).to_f64_vector();
    ASSERT_EQ(yg.size(), yh.size());
    for (std::size_t i = 0; i < yh.size(); ++i) {
      EXPECT_EQ(std::isnan(yg[i]), std::isnan(yh[i])) << i;
      if (!std::isnan(yh[i])) {
        EXPECT_NEAR(yg[i], yh[i], 1e-2 * std::fabs(yh[i]) + 1e-30) << i;
      }
    }
  }
}

// One GPU FP8 linear (`gpu`: device x, device quantized weight, device bias) against a float64 evaluation of the
// same quantized values and against the CPU op, for case c in dtype dt.
using GpuLinear = std::function<Tensor(const Tensor& x, const Fp8Matrix& wq, const Tensor& bias, bool gelu)>;
void expect_fp8_linear_matches(const Fp8Case& c, DType dt, bool with_bias, bool gelu, std::mt19937_64& rng,
                               const GpuLinear& gpu, const char* tag) {
  const std::int64_t in = c.x.back(), rows = shape_numel(c.x) / in;
  const Tensor x = rows_for(c.x, dt, rng);
  const RandomTensor w = random_tensor({c.out, in}, dt, rng, 0.0f, 0.05f);
  const RandomTensor b = random_tensor({c.out}, dt, rng);
  const Tensor bias = with_bias ? b.t : Tensor();
  const Fp8Matrix wq_h = ops::quantize_rows_e4m3(w.t);
  const Fp8Matrix wq_g = ops::quantize_rows_e4m3(dev(w.t));
  poison_device_heap();
  const Tensor yg = gpu(dev(x), wq_g, dev(bias), gelu);
  ASSERT_TRUE(yg.defined()) << tag << ": declined these operands";
  const Tensor yh = gelu ? ops::linear_fp8_gelu_tanh(x, wq_h, bias) : ops::linear_fp8(x, wq_h, bias);
  const Fp8Matrix xq = ops::quantize_rows_e4m3(x);
  std::vector<double> ref = linear_fp8_ref(codes_of(xq), floats_of(xq.scales), codes_of(wq_h), floats_of(wq_h.scales),
                                           with_bias ? &b.v : nullptr, rows, in, c.out);
  if (gelu)
    for (double& v : ref) v = gelu_tanh_f64(v);
  // The GEMM sums exact e4m3 products in another order than the reference, and Hopper's FP8 tensor
  // cores add in reduced precision (about 14 mantissa bits) between cuBLASLt's float32
  // promotions: float32 results get 2e-4 (an estimate, not yet measured), 16-bit ones their
  // rounding budget.
  const double lim = dt == DType::F32 ? 2e-4 : limit_f64(dt);
  ASSERT_EQ(yg.device(), Device::CUDA);
  ASSERT_EQ(yg.shape(), yh.shape());
  ASSERT_EQ(yg.dtype(), dt);
  ErrorStats e;
  EXPECT_EQ(check_against(yg, ref, lim, &e), "") << "vs float64";
  EXPECT_EQ(check_against(yg, yh.to_f64_vector(), lim), "") << "vs the CPU emulation";
  if (c.out == 1536)
    std::printf("[ %s ] %s %s: rel L2 vs float64 %.3g\n", tag, shape_str(c.x).c_str(), std::string(dtype_name(dt)).c_str(),
                e.rel_l2);
}

std::string case_name(const Fp8Case& c, bool with_bias, bool gelu) {
  return shape_str(c.x) + " out " + std::to_string(c.out) + (with_bias ? " bias" : "") + (gelu ? " gelu" : "");
}

TEST(OpsCudaLinearFp8, MatchesFloat64OfTheQuantizedValuesAndTheCpuOp) {
  DATTN_SKIP_WITHOUT_CUDA();
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  const GpuLinear op = [](const Tensor& x, const Fp8Matrix& wq, const Tensor& bias, bool gelu) {
    return gelu ? ops::linear_fp8_gelu_tanh(x, wq, bias) : ops::linear_fp8(x, wq, bias);
  };
  for (const auto& c : kCases)
    for (DType dt : kFloatDTypes)
      for (bool with_bias : {true, false})
        for (bool gelu : {false, true}) {
          SCOPED_TRACE(trace(dt, seed, case_name(c, with_bias, gelu)));
          expect_fp8_linear_matches(c, dt, with_bias, gelu, rng, op, "fp8 cuda");
        }
}

TEST(OpsCudaLinearFp8, ASharedQuantizedActivationEqualsEachLinearOfX) {
  DATTN_SKIP_WITHOUT_CUDA();
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  for (DType dt : kFloatDTypes) {
    SCOPED_TRACE(trace(dt, seed, "[2,9,64] -> 48, 40"));
    const Tensor x = dev(rows_for({2, 9, 64}, dt, rng));
    const Fp8Matrix q1 = ops::quantize_rows_e4m3(dev(random_tensor({48, 64}, dt, rng, 0.0f, 0.05f).t));
    const Fp8Matrix q2 = ops::quantize_rows_e4m3(dev(random_tensor({40, 64}, dt, rng, 0.0f, 0.05f).t));
    const Tensor bias = dev(random_tensor({48}, dt, rng).t);
    poison_device_heap();
    const ops::LinearInput in(x);
    EXPECT_TRUE(bytes_of(ops::linear_fp8(in.fp8(), q1, bias)) == bytes_of(ops::linear_fp8(x, q1, bias)));
    EXPECT_TRUE(bytes_of(ops::linear_fp8_gelu_tanh(in.fp8(), q2)) == bytes_of(ops::linear_fp8_gelu_tanh(x, q2)));
  }
}

// The fused GELU + requantization kernel (bf16/fp16, widths of a multiple of 8) and its fallback (fp32,
// odd widths) give the bytes of the unfused CUDA path: the same accumulator, scales, rounding and codes.
TEST(OpsCudaLinearFp8, TheQuantizedGeluOutputIsTheQuantizationOfTheGeluLinear) {
  DATTN_SKIP_WITHOUT_CUDA();
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  for (DType dt : kFloatDTypes)
    for (std::int64_t out : {std::int64_t{40}, std::int64_t{7}, std::int64_t{14336}})
      for (bool with_bias : {true, false}) {
        SCOPED_TRACE(trace(dt, seed, "[17,64] -> " + std::to_string(out) + (with_bias ? " bias" : "")));
        const Tensor x = dev(rows_for({17, 64}, dt, rng));
        const Fp8Matrix w = ops::quantize_rows_e4m3(dev(random_tensor({out, 64}, dt, rng, 0.0f, 0.05f).t));
        const Tensor bias = with_bias ? dev(random_tensor({out}, dt, rng).t) : Tensor();
        poison_device_heap();
        const ops::Fp8Activation got = ops::linear_fp8_gelu_tanh_quantized(ops::quantize_activation(x), w, bias);
        const ops::Fp8Activation want = ops::quantize_activation(ops::linear_fp8_gelu_tanh(x, w, bias));
        ASSERT_EQ(got.shape, want.shape);
        EXPECT_TRUE(bytes_of(got.rows.values) == bytes_of(want.rows.values)) << "codes differ (padding included)";
        EXPECT_TRUE(bytes_of(got.rows.scales) == bytes_of(want.rows.scales)) << "scales differ";
      }
}

TEST(OpsCudaLinearFp8, KZeroEmptyRowsAndThePlanCacheOfTheBf16Linear) {
  DATTN_SKIP_WITHOUT_CUDA();
  const Fp8Matrix w0 = ops::quantize_rows_e4m3(dev(Tensor::zeros({3, 0}, DType::BF16)));
  const Tensor bias = Tensor::from_f32({1, 2, 3}, {3}, DType::BF16);
  EXPECT_EQ(ops::linear_fp8(dev(Tensor::zeros({2, 0}, DType::BF16)), w0, dev(bias)).to_f64_vector(),
            (std::vector<double>{1, 2, 3, 1, 2, 3}));
  const Fp8Matrix w = ops::quantize_rows_e4m3(dev(Tensor::from_f32({1, 2}, {1, 2}, DType::BF16)));
  EXPECT_EQ(ops::linear_fp8(dev(Tensor::zeros({0, 2}, DType::BF16)), w).shape(), (Shape{0, 1}));
#ifdef DATTN_WITH_CUDA
  const std::size_t plans = ops::cuda::gemm_plan_count();
  (void)ops::linear_fp8(dev(Tensor::from_f32({1, 1, 2, 2}, {2, 2}, DType::BF16)), w);
  device_synchronize();
  EXPECT_EQ(ops::cuda::gemm_plan_count(), plans) << "FP8 GEMMs have their own plans";
#endif
}

TEST(OpsCudaLinearFp8, MixedDevicesAreUserErrors) {
  DATTN_SKIP_WITHOUT_CUDA();
  const Fp8Matrix w = ops::quantize_rows_e4m3(Tensor::from_f32({1, 2, 3, 4}, {2, 2}));
  EXPECT_NE(user_error([&] { ops::linear_fp8(dev(Tensor::zeros({1, 2}, DType::BF16)), w); }).find("weight"),
            std::string::npos);
}

}  // namespace
}  // namespace dattn::testing
