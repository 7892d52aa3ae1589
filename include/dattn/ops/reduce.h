#pragma once
// Reductions over the token dimension.
#include <cstdint>
#include <vector>

#include "dattn/core/tensor.h"

namespace dattn::ops {

// x [B, N, D] (any float dtype); counts[b] in [1, N]. Returns [B, D] float32 on x's device: the mean of
// the first counts[b] rows of batch item b (the masked mean pooling of a right-padded text sequence,
// diffusers' (x * mask).sum(1) / mask.sum(1) for a prefix mask). Accumulated in double on the CPU and
// in float32 on CUDA.
Tensor mean_rows(const Tensor& x, const std::vector<std::int64_t>& counts);

}  // namespace dattn::ops
