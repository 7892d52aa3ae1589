#pragma once
// Matrix transpose: the layouts the two products of an attention read differ (scores read keys as rows,
// the value product reads values as columns), and a causal VAE's attention keeps its growing key and
// value caches as rows.
#include "dattn/core/tensor.h"

namespace dattn::ops {

// x [R, C] float32 -> [C, R] float32 on x's device (exact: a copy).
Tensor transpose2d(const Tensor& x);

}  // namespace dattn::ops
