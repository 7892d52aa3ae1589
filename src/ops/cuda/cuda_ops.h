#pragma once
// CUDA implementations of the ops in include/dattn/ops/, called by the dispatchers in src/ops/*.cc after
// the arguments were checked (shapes, dtypes, one device). Plain C++: no CUDA header is included, so the
// dispatchers compile as C++20 and only the .cu files see the CUDA toolkit. Every op is asynchronous on
// the current run context's stream (current_context(Device::CUDA)): it launches and returns; errors of a launch are reported at once, errors of the
// kernel itself at the next synchronising call.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "dattn/ops/ops.h"

namespace dattn::ops::cuda {

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias);
Tensor linear_gelu_tanh(const Tensor& x, const Tensor& weight, const Tensor& bias);
void linear(const Tensor& x, const Tensor& weight, const Tensor& bias, const RowWindow& into);
Tensor linear(const RowWindow& x_rows, std::int64_t rows, const Tensor& weight, const Tensor& bias);
Tensor layer_norm(const Tensor& x, float eps, const Tensor& weight, const Tensor& bias);
Tensor rms_norm(const Tensor& x, float eps, const Tensor& weight);
Tensor rms_norm_rope_interleaved(const Tensor& x, float eps, const Tensor& weight, const Tensor& cos,
                                 const Tensor& sin);
void rms_norm(const Tensor& x, float eps, const Tensor& weight, const RowWindow& into);
void rms_norm_rope_interleaved(const Tensor& x, float eps, const Tensor& weight, const Tensor& cos, const Tensor& sin,
                               const RowWindow& into);
Tensor gelu_tanh(const Tensor& x);
Tensor gelu(const Tensor& x);
Tensor silu(const Tensor& x);
Tensor mean_rows(const Tensor& x, const std::vector<std::int64_t>& counts);
Tensor add(const Tensor& a, const Tensor& b, const Shape& shape, DType out_dtype);
Tensor mul(const Tensor& a, const Tensor& b, const Shape& shape, DType out_dtype);
Tensor layer_norm_modulated(const Tensor& x, float eps, const TokenModulation& m, int shift_k, int scale_k);
Tensor gated_residual(const Tensor& h, const Tensor& x, const TokenModulation& m, int gate_k);
ResidualAndNorm residual_layer_norm_modulated(const Tensor& h, const Tensor& x, const TokenModulation* gate, int gate_k,
                                              float eps, const TokenModulation& norm, int shift_k, int scale_k);
ResidualAndNorm residual_layer_norm(const Tensor& h, const Tensor& x, const TokenModulation* gate, int gate_k, float eps,
                                    const Tensor& weight, const Tensor& bias);
Tensor sum_squares(const Tensor& x);
Tensor rms_norm_with_sums(const Tensor& x, const Tensor& sums, std::int64_t width, float eps, const Tensor& weight);
Tensor apply_rope_interleaved(const Tensor& x, const Tensor& cos, const Tensor& sin);
Tensor apply_rope_rotate_half(const Tensor& x, const Tensor& cos, const Tensor& sin);
Tensor timestep_embedding(const Tensor& t, const TimestepEmbeddingParams& p);
Tensor patch_embed_3d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Patch3& patch);
Tensor unpatchify_3d(const Tensor& x, const Patch3& grid, const Patch3& patch, std::int64_t channels);

// A copy of `t` (CUDA, fp32/bf16/fp16/fp64) converted to `dtype` on the device, rounded to nearest even;
// `t` itself when it already has that dtype.
Tensor convert(const Tensor& t, DType dtype);

// Number of distinct GEMM plans (shape, dtypes, alignment) the current context's linear cached so far;
// for tests.
std::size_t gemm_plan_count();

}  // namespace dattn::ops::cuda
