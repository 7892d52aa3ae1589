#pragma once
// CPU implementations of the ops in include/dattn/ops/, called by the dispatchers in src/ops/*.cc
// after the arguments were checked. Host tensors only.
#include <cstdint>
#include <vector>
#include <optional>

#include "dattn/ops/ops.h"

namespace dattn::ops::cpu {

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias);
Tensor layer_norm(const Tensor& x, float eps, const Tensor& weight, const Tensor& bias);
Tensor rms_norm(const Tensor& x, float eps, const Tensor& weight);
Tensor rms_norm_rope_interleaved(const Tensor& x, float eps, const Tensor& weight, const Tensor& cos,
                                 const Tensor& sin);
Tensor sum_squares(const Tensor& x);
Tensor rms_norm_with_sums(const Tensor& x, const Tensor& sums, std::int64_t width, float eps, const Tensor& weight);
Tensor gelu_tanh(const Tensor& x);
Tensor gelu(const Tensor& x);
Tensor silu(const Tensor& x);
Tensor mean_rows(const Tensor& x, const std::vector<std::int64_t>& counts);
Tensor add(const Tensor& a, const Tensor& b, const Shape& shape, DType out_dtype);
Tensor mul(const Tensor& a, const Tensor& b, const Shape& shape, DType out_dtype);
Tensor layer_norm_modulated(const Tensor& x, float eps, const TokenModulation& m, int shift_k, int scale_k);
Tensor gated_residual(const Tensor& h, const Tensor& x, const TokenModulation& m, int gate_k);
Tensor apply_rope_interleaved(const Tensor& x, const Tensor& cos, const Tensor& sin);
Tensor apply_rope_rotate_half(const Tensor& x, const Tensor& cos, const Tensor& sin);
Tensor timestep_embedding(const Tensor& t, const TimestepEmbeddingParams& p);
Tensor patch_embed_3d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Patch3& patch);
Tensor unpatchify_3d(const Tensor& x, const Patch3& grid, const Patch3& patch, std::int64_t channels);

Tensor normalize_channels(const Tensor& x, const Tensor& gain, bool silu);
Tensor softmax(const Tensor& x, float scale);
Tensor upsample_nearest2x(const Tensor& x, int parts);
void add_dup_up(Tensor& out, const Tensor& in, int factor_t, int factor_s, int drop);
void dcae_upsample(const Tensor& h, const Tensor& x, int factor_t, bool first_frame, Tensor& out);
void transpose2d(const Tensor& x, Tensor& y);
Tensor video_to_rgb_frames(const Tensor& video, std::int64_t first, std::int64_t count);
void write_unpatchified_frames(const Tensor& chunk, int patch, Tensor& video, std::int64_t b, std::int64_t t0,
                               bool clamp);

// Y[M, N] = X[M, K] · W[N, K]ᵀ (+ bias[N]), float32 row-major, through cblas_sgemm.
void gemm_xwt(const float* x, std::int64_t m, std::int64_t k, const float* w, std::int64_t n,
              const float* bias, float* y);

}  // namespace dattn::ops::cpu
