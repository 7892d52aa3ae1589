#pragma once
// CPU kernels of include/dattn/ops/combine.h (arguments already checked by src/ops/combine.cc).
#include <cstddef>
#include <vector>

#include "dattn/ops/combine.h"

namespace dattn::ops {
// The most terms one linear_combination takes (the CUDA kernel's argument block holds this many).
inline constexpr std::size_t kMaxCombinationTerms = 8;
}  // namespace dattn::ops

namespace dattn::ops::cpu {

Tensor linear_combination(const std::vector<ScaledTensor>& terms, DType out_dtype);
Tensor guidance_combine(const Tensor& cond, const Tensor& uncond, float scale);

}  // namespace dattn::ops::cpu
