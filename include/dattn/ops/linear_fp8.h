#pragma once
// FP8 (e4m3) linear layers: weights quantized per output channel once, activations per token on every
// call, an FP8 GEMM with float32 accumulation, the two scales and the bias applied afterwards in float32.
//
//   q[r, k] = e4m3(x[r, k] / s[r]),  s[r] = amax_k |x[r, k]| / 448  (1 for an all-zero row)
//   y[m, n] = fma(acc[m, n], sx[m] * sw[n], bias[n]),  acc = Σ_k q_x[m, k] q_w[n, k] in float32
//
// e4m3 is dattn's f32_to_e4m3 (core/dtype.h: round to nearest even, saturating at ±448, NaN stays NaN),
// the same conversion as the GPU's cvt.rn.satfinite. The divisions and the fma are IEEE float32 on both
// devices, so the quantized bytes and scales are bit-identical between CPU and CUDA; the GEMM differs
// only in the order of its float32 additions (every product of two e4m3 values is exact in float32).
//
// Non-finite inputs: amax ignores NaN (fmax), a NaN element quantizes to the NaN code and an Inf makes
// the row's scale Inf (Inf / Inf is NaN), so a row holding any NaN or Inf gives a NaN output row; rows
// without one are unaffected. The bf16 linear gives NaN (or Inf) in the same rows.
//
// Why scales after the GEMM: cuBLASLt on sm_90 applies FP8 scales per tensor only (per-row/column
// "outer vector" scale modes need newer GPUs), and a per-token scale cannot be folded into the e4m3
// operands. So CUDA writes the float32 accumulator and one kernel applies both scales, the bias and
// optionally GELU, rounding once to the output dtype (docs/fp8.md).
#include <cstdint>

#include "dattn/core/tensor.h"

namespace dattn::ops {

// cuBLASLt's FP8 kernels need K and the leading dimensions to be multiples of 16: matrices are stored
// with rows and columns zero-padded to this (zeros add nothing to the dot products).
inline constexpr std::int64_t kFp8Pad = 16;
inline std::int64_t fp8_padded(std::int64_t n) { return (n + kFp8Pad - 1) / kFp8Pad * kFp8Pad; }

// A row-quantized matrix: `rows` x `cols` real entries.
struct Fp8Matrix {
  Tensor values;  // FP8_E4M3 [fp8_padded(rows), fp8_padded(cols)], zero outside the real entries
  Tensor scales;  // F32 [rows]: the dequantized value is e4m3_to_f32(values[r, c]) * scales[r]
  std::int64_t rows = 0, cols = 0;
  bool defined() const { return values.defined(); }
};

// x [..., K] (fp32, bf16, fp16) as rows of K: quantized per row as above, on x's device.
Fp8Matrix quantize_rows_e4m3(const Tensor& x);

// linear(x, weight, bias) with weight = quantize_rows_e4m3(W) of W [out, in]: x [..., in] (fp32, bf16 or
// fp16) quantized per token, y [..., out] in x's dtype; bias [out] (float dtype) or undefined.
Tensor linear_fp8(const Tensor& x, const Fp8Matrix& weight, const Tensor& bias = Tensor());
// gelu_tanh applied to the float32 result of linear_fp8 before the rounding.
Tensor linear_fp8_gelu_tanh(const Tensor& x, const Fp8Matrix& weight, const Tensor& bias = Tensor());

}  // namespace dattn::ops
