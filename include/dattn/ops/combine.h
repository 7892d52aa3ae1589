#pragma once
// Whole-tensor arithmetic of the denoise loop, on the latents' device so they never leave it between
// steps: dtype casts, the schedulers' linear combinations (in double, as their host code computes) and
// classifier-free guidance (in float32, rounded after every operation as torch does).
#include <vector>

#include "dattn/core/tensor.h"

namespace dattn::ops {

// A copy of `x` converted to `dtype` on x's device (round to nearest even); x itself when it already has
// that dtype. fp32, bf16, fp16 and fp64.
Tensor cast(const Tensor& x, DType dtype);

struct ScaledTensor {
  double coefficient = 0;
  Tensor tensor;
};

// sum_j coefficient_j * tensor_j over equal shapes on one device, every term read as double and summed
// in double in the order given, rounded once to `out_dtype` (fp32 or fp64). 1 to 8 terms of fp32 or
// fp64 tensors.
Tensor linear_combination(const std::vector<ScaledTensor>& terms, DType out_dtype);

// uncond + scale * (cond - uncond), fp32 tensors of one shape on one device: the difference, the product
// and the sum each rounded to float32 (no fused multiply-add), as diffusers' pipelines compute it.
Tensor guidance_combine(const Tensor& cond, const Tensor& uncond, float scale);

}  // namespace dattn::ops
