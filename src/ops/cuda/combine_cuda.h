#pragma once
// CUDA kernels of include/dattn/ops/combine.h (arguments already checked by src/ops/combine.cc). Plain
// C++ header; implemented in combine.cu.
#include <vector>

#include "dattn/ops/combine.h"

namespace dattn::ops::cuda {

Tensor linear_combination(const std::vector<ScaledTensor>& terms, DType out_dtype);
Tensor guidance_combine(const Tensor& cond, const Tensor& uncond, float scale);

}  // namespace dattn::ops::cuda
