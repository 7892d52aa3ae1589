// FP8 linear on the CPU: the emulation of the CUDA path (ops/linear_fp8.h), bit-exact in the quantized
// values and scales; the GEMM runs on the e4m3 values widened to float32 (exact) through OpenBLAS.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "dattn/core/dtype.h"
#include "ops/cpu/cpu_ops.h"
#include "ops/cpu/f32_io.h"
#include "ops/cpu/linear_fp8.h"

namespace dattn::ops::cpu {
namespace {

// The e4m3 code of every float32 is f32_to_e4m3; decoding the 256 codes once is cheaper than per element.
struct E4m3Table {
  float v[256];
  E4m3Table() {
    for (int c = 0; c < 256; ++c) v[c] = e4m3_to_f32(static_cast<std::uint8_t>(c));
  }
};
const E4m3Table& e4m3_table() {
  static const E4m3Table t;
  return t;
}

// Same formula as the CUDA epilogue (ops/cuda/linear_fp8.cu): x * sigmoid(2u).
float gelu_tanh_f(float x) {
  const float k = 0.7978845608028654f;  // sqrt(2 / pi)
  const float u = k * (x + 0.044715f * x * x * x);
  return x / (1.0f + std::exp(-2.0f * u));
}

// The e4m3 values of a padded matrix as float32 [rows, cols_padded] (padding included, all zeros).
std::vector<float> widen(const Fp8Matrix& m, std::int64_t rows) {
  const std::int64_t kp = m.values.dim(1);
  const auto* q = m.values.data_as<std::uint8_t>();
  const float* table = e4m3_table().v;
  std::vector<float> out(static_cast<std::size_t>(rows * kp));
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < rows * kp; ++i) out[i] = table[q[i]];
  return out;
}

}  // namespace

Fp8Matrix quantize_rows_e4m3(const Tensor& x) {
  const std::int64_t k = x.ndim() ? x.dim(-1) : 1;
  const std::int64_t rows = x.ndim() ? shape_numel(Shape(x.shape().begin(), x.shape().end() - 1)) : 1;
  const std::int64_t rp = fp8_padded(rows), kp = fp8_padded(k);
  Fp8Matrix m;
  m.rows = rows;
  m.cols = k;
  m.values = Tensor::zeros({rp, kp}, DType::FP8_E4M3);
  m.scales = Tensor::empty({rows}, DType::F32);
  F32View xv(x);
  const float* xs = xv.data();
  auto* q = m.values.data_as<std::uint8_t>();
  float* scales = m.scales.data_as<float>();
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = xs + r * k;
    float amax = 0.0f;
    for (std::int64_t i = 0; i < k; ++i) amax = std::fmax(amax, std::fabs(row[i]));  // NaN ignored
    const float s = amax == 0.0f ? 1.0f : amax / 448.0f;
    scales[r] = s;
    for (std::int64_t i = 0; i < k; ++i) {
      const float v = row[i] / s;
      // The GPU writes every NaN as 0x7F; f32_to_e4m3 keeps the sign (0xFF). Same value, same bytes.
      q[r * kp + i] = std::isnan(v) ? std::uint8_t{0x7F} : f32_to_e4m3(v);
    }
  }
  return m;
}

Tensor linear_fp8(const Fp8Activation& x, const Fp8Matrix& weight, const Tensor& bias, bool gelu) {
  const std::int64_t out = weight.rows, in = weight.cols;
  Shape shape = x.shape;
  shape.back() = out;
  Tensor y = Tensor::empty(shape, x.dtype);
  const std::int64_t rows = x.rows.rows;
  if (y.numel() == 0) return y;
  const Fp8Matrix& xq = x.rows;
  const std::int64_t kp = fp8_padded(in);
  const std::vector<float> xf = widen(xq, rows), wf = widen(weight, out);
  std::vector<float> acc(static_cast<std::size_t>(rows * out));
  gemm_xwt(xf.data(), rows, kp, wf.data(), out, nullptr, acc.data());
  F32View bv(bias);
  const float* b = bv.data();
  const float* sx = xq.scales.data_as<float>();
  const float* sw = weight.scales.data_as<float>();
  F32Sink ys(y);
  float* yo = ys.data();
  // As on CUDA, a bf16 output takes the accumulator rounded to bf16 first (the GEMM's D is bf16 there).
  const bool bf16_acc = x.dtype == DType::BF16;
#pragma omp parallel for schedule(static)
  for (std::int64_t m = 0; m < rows; ++m)
    for (std::int64_t n = 0; n < out; ++n) {
      const float a = bf16_acc ? bf16_to_f32(f32_to_bf16(acc[m * out + n])) : acc[m * out + n];
      const float v = std::fma(a, sx[m] * sw[n], b ? b[n] : 0.0f);
      yo[m * out + n] = gelu ? gelu_tanh_f(v) : v;
    }
  ys.finish();
  return y;
}

}  // namespace dattn::ops::cpu
