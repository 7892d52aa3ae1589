#pragma once
// CUDA kernel of include/dattn/ops/finite.h (arguments already checked by src/ops/finite.cc). Plain
// C++ header; implemented in finite.cu.
#include "dattn/ops/finite.h"

namespace dattn::ops::cuda {

NonFinite count_nonfinite(const Tensor& x);

}  // namespace dattn::ops::cuda
