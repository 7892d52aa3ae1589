#pragma once
// Normalisations over the last dimension, computed in float32 (statistics accumulated in double on the
// CPU) whatever the storage dtype, as diffusers' FP32LayerNorm and torch.nn.RMSNorm do. The result has
// x's shape, device and dtype.
#include "dattn/core/tensor.h"

namespace dattn::ops {

// (x - mean) / sqrt(var + eps) [* weight + bias]; var is the biased variance. weight and bias are [D]
// or undefined (elementwise_affine=False); one may not be given without the other.
Tensor layer_norm(const Tensor& x, float eps, const Tensor& weight = Tensor(), const Tensor& bias = Tensor());

// x / sqrt(mean(x^2) + eps) [* weight]; weight is [D] or undefined.
Tensor rms_norm(const Tensor& x, float eps, const Tensor& weight = Tensor());

}  // namespace dattn::ops
