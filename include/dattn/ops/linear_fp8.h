#pragma once
// FP8 (e4m3) linear layers: weights quantized per output channel once, activations per token on every
// call, an FP8 GEMM with float32 accumulation, the two scales and the bias applied afterwards in float32.
//
//   q[r, k] = e4m3(x[r, k] / s[r]),  s[r] = amax_k |x[r, k]| / 448  (1 for an all-zero row)
//   y[m, n] = fma(acc[m, n], sx[m] * sw[n], bias[n]),  acc = Σ_k q_x[m, k] q_w[n, k] in float32
//
// For a bf16 output acc is rounded to bf16 before the fma (the GEMM writes it in bf16 on CUDA: half the
// bytes; the rounding adds at most one bf16 ulp to an output that is rounded to bf16 anyway). fp16 and
// fp32 outputs keep the float32 acc (|acc| reaches 448^2 K, past fp16's range).
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
// Why scales after the GEMM: cuBLASLt on sm_90 applies FP8 scales per tensor (its per-channel alpha
// vector is refused for FP8; the "outer vector" scale mode was measured slower, docs/fp8.md), and a
// per-token scale cannot be folded into the e4m3 operands. So CUDA writes the accumulator and one kernel applies both scales, the bias and optionally
// GELU, rounding once to the output dtype (docs/fp8.md).
#include <cstdint>
#include <optional>

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

// An activation x quantized per token (its rows), with what the linear's output takes from x.
struct Fp8Activation {
  Fp8Matrix rows;  // quantize_rows_e4m3(x)
  Shape shape;     // x's shape
  DType dtype = DType::F32;  // x's dtype, the output's
};
Fp8Activation quantize_activation(const Tensor& x);

// linear(x, weight, bias) with weight = quantize_rows_e4m3(W) of W [out, in]: x [..., in] (fp32, bf16 or
// fp16) quantized per token, y [..., out] in x's dtype; bias [out] (float dtype) or undefined.
Tensor linear_fp8(const Tensor& x, const Fp8Matrix& weight, const Tensor& bias = Tensor());
// gelu_tanh applied to the float32 result of linear_fp8 before the rounding.
Tensor linear_fp8_gelu_tanh(const Tensor& x, const Fp8Matrix& weight, const Tensor& bias = Tensor());
// The same from an activation quantized once for several linears (self-attention's q, k and v):
// equal bit for bit to the forms above on that x.
Tensor linear_fp8(const Fp8Activation& x, const Fp8Matrix& weight, const Tensor& bias = Tensor());
Tensor linear_fp8_gelu_tanh(const Fp8Activation& x, const Fp8Matrix& weight, const Tensor& bias = Tensor());
// quantize_activation(linear_fp8_gelu_tanh(x, weight, bias)) bit for bit, for an FFN whose second linear
// is FP8 too; on CUDA one kernel for bf16/fp16 outputs up to 16384 wide (the GELU output is not written).
Fp8Activation linear_fp8_gelu_tanh_quantized(const Fp8Activation& x, const Fp8Matrix& weight,
                                             const Tensor& bias = Tensor());

// linear_fp8(linear_fp8_gelu_tanh_quantized(quantize_activation(x), w_in, b_in), w_out, b_out): a GELU
// feed-forward whose two linears are FP8, its hidden activation never written in the run dtype.
Tensor feed_forward_fp8(const Tensor& x, const Fp8Matrix& w_in, const Tensor& b_in, const Fp8Matrix& w_out,
                        const Tensor& b_out);

// One input of several linears, some of which may be FP8: quantized on the first FP8 use only.
// Holds a reference to x: it lives no longer than the expression or block that uses x.
class LinearInput {
 public:
  explicit LinearInput(const Tensor& x) : x_(x) {}
  const Tensor& tensor() const { return x_; }
  const Fp8Activation& fp8() const {
    if (!q_) q_ = quantize_activation(x_);
    return *q_;
  }

 private:
  const Tensor& x_;
  mutable std::optional<Fp8Activation> q_;
};

}  // namespace dattn::ops
