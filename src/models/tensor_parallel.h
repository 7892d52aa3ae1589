#pragma once
// The pieces of Megatron-style tensor parallelism the models share: which part of a split dimension a
// rank holds, and the RMS norm of rows whose columns are split over the ranks (a norm across all heads
// when each rank holds some heads).
#include <cstdint>

#include "dattn/core/tensor.h"
#include "dattn/io/weight_store.h"
#include "dattn/parallel/communicator.h"

namespace dattn::models {

// Rank `rank`'s equal part of `n` entries along `dim`: [rank n/P, (rank + 1) n/P) for P = `ranks`.
// UserError when n does not divide by P (the pipelines check this before any weight is read).
TensorSlice rank_slice(int rank, int ranks, std::int64_t n, int dim);
// The same for this rank of `group`.
TensorSlice rank_slice(const parallel::Communicator& group, std::int64_t n, int dim);

// RMS norm over whole rows of `width` columns, of which this rank holds x [..., N] and their gains `gain`
// ([N] or undefined): the per-row sums of squares are summed over `group` (one all-reduce of [...] float64
// values), then each rank normalises its own columns. Equal to the matching columns of ops::rms_norm of
// the whole rows to float32 rounding (norm_split.h).
Tensor rms_norm_across_ranks(parallel::Communicator& group, const Tensor& x, std::int64_t width, float eps,
                             const Tensor& gain);
// The same followed by the interleaved rotary embedding (ops::rms_norm_rope_interleaved's layout):
// x [B, S, 1, N], cos and sin [S, Dr] float32.
Tensor rms_norm_rope_across_ranks(parallel::Communicator& group, const Tensor& x, std::int64_t width, float eps,
                                  const Tensor& gain, const Tensor& cos, const Tensor& sin);

}  // namespace dattn::models
