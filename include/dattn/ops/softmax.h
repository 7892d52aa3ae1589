#pragma once
// Softmax over the last dimension.
#include "dattn/core/tensor.h"

namespace dattn::ops {

// softmax(scale * x) over the last dimension, x float32 (a new tensor of x's shape and device). Rows are
// shifted by their maximum first, so large scores do not overflow; a NaN in a row makes the row NaN.
Tensor softmax(const Tensor& x, float scale = 1.0f);

}  // namespace dattn::ops
