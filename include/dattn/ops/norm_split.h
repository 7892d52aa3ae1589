#pragma once
// The RMS norm of rows whose columns are split over processes (tensor parallel: Wan's query/key norm runs
// across all heads, and each rank holds some of the heads). Each process takes the sums of squares of its
// columns (sum_squares), the caller adds them up over the processes, and each process normalises its
// columns by the whole row's mean square (rms_norm_with_sums). On the CPU the sums and the scale are in
// double, as rms_norm's: the columns agree with rms_norm of the whole row to float32 rounding (the only
// difference is the order in which the double partial sums are added).
#include <cstdint>

#include "dattn/core/tensor.h"

namespace dattn::ops {

// x [..., N] (any float dtype) -> [...] float64 on x's device: the sum of x^2 over the last dimension.
Tensor sum_squares(const Tensor& x);

// x / sqrt(sums / width + eps) [* weight]: x [..., N]; sums [...] float64, the whole rows' sums of squares;
// width the whole rows' length (>= N); weight [N] (this part's gains) or undefined. y has x's shape,
// device and dtype.
Tensor rms_norm_with_sums(const Tensor& x, const Tensor& sums, std::int64_t width, float eps,
                          const Tensor& weight = Tensor());

// rms_norm_with_sums, then apply_rope_interleaved on each run of Dr = cos.dim(1) elements, rounded once
// (rms_norm_rope_interleaved of norm.h for a part of the row): x [B, S, G, N], sums [B, S, G], cos and sin
// [S, Dr] float32.
Tensor rms_norm_rope_interleaved_with_sums(const Tensor& x, const Tensor& sums, std::int64_t width, float eps,
                                           const Tensor& weight, const Tensor& cos, const Tensor& sin);

}  // namespace dattn::ops
