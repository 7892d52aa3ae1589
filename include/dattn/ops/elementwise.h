#pragma once
// Elementwise arithmetic with numpy/torch broadcasting: shapes are aligned at their last dimension and
// each pair of sizes must be equal or one of them 1 (a [R, 6, D] + b [6, D]; a [1, 2, D] + b [R, 1, D]
// gives [R, 2, D]). Computed in float32; the result is on a's device, of the broadcast shape and of
// `out_dtype` (a's dtype when not given).
#include <optional>

#include "dattn/core/tensor.h"

namespace dattn::ops {

Tensor add(const Tensor& a, const Tensor& b, std::optional<DType> out_dtype = std::nullopt);
Tensor mul(const Tensor& a, const Tensor& b, std::optional<DType> out_dtype = std::nullopt);

// The broadcast shape of a and b; nullopt when they do not broadcast.
std::optional<Shape> broadcast_shape(const Shape& a, const Shape& b);

}  // namespace dattn::ops
