#pragma once
// Normalisations over the last dimension, computed in float32 (statistics accumulated in double on the
// CPU) whatever the storage dtype, as diffusers' FP32LayerNorm and torch.nn.RMSNorm do. The result has
// x's shape, device and dtype.
#include <optional>

#include "dattn/core/tensor.h"
#include "dattn/ops/row_window.h"

namespace dattn::ops {

// (x - mean) / sqrt(var + eps) [* weight + bias]; var is the biased variance. weight and bias are [D]
// or undefined (elementwise_affine=False); one may not be given without the other.
Tensor layer_norm(const Tensor& x, float eps, const Tensor& weight = Tensor(), const Tensor& bias = Tensor());

// x / sqrt(mean(x^2) + eps) [* weight]; weight is [D] or undefined.
Tensor rms_norm(const Tensor& x, float eps, const Tensor& weight = Tensor());
// The same written into rows of `into` (x [B, S, ...]).
void rms_norm(const Tensor& x, float eps, const Tensor& weight, const RowWindow& into);

// rms_norm over the last dimension, then apply_rope_interleaved (rope.h) on each run of Dr = cos.dim(1)
// elements of the row, in one pass rounded once (the query/key norm and the rotary embedding of the
// video models). x [B, S, G, N] with N % Dr == 0 and Dr even; weight [N] or undefined; cos, sin [S, Dr]
// float32. HunyuanVideo-1.5 normalises each head (G = heads, N = Dr = head dim), Wan across heads (G = 1,
// N = heads x head dim). y has x's shape, device and dtype.
Tensor rms_norm_rope_interleaved(const Tensor& x, float eps, const Tensor& weight, const Tensor& cos,
                                 const Tensor& sin);
void rms_norm_rope_interleaved(const Tensor& x, float eps, const Tensor& weight, const Tensor& cos, const Tensor& sin,
                               const RowWindow& into);

// F.normalize over the last dimension times a gain, then SiLU when `silu`: the channel norm of the causal
// video VAEs on channels-last frames (diffusers' WanRMS_norm is this with gain = sqrt(C) * gamma):
// y = x / max(||x||_2, 1e-12) * gain. x and gain ([D]) on one device, gain float32, x float32 (or
// bfloat16 on CUDA: computed in float32); y of `out_dtype` (x's when not given; CUDA: fp32 or bf16, the
// CPU: fp32). A NaN stays NaN.
Tensor normalize_channels(const Tensor& x, const Tensor& gain, bool silu,
                          std::optional<DType> out_dtype = std::nullopt);

}  // namespace dattn::ops
