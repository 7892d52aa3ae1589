// Tensor-parallel helpers (see tensor_parallel.h).
#include "models/tensor_parallel.h"

#include <string>

#include "dattn/core/error.h"
#include "dattn/ops/norm_split.h"

namespace dattn::models {

TensorSlice rank_slice(int rank, int ranks, std::int64_t n, int dim) {
  if (n % ranks != 0)
    throw UserError("tensor parallel over " + std::to_string(ranks) + " ranks: a dimension of " + std::to_string(n) +
                    " entries does not split evenly; expected a multiple of " + std::to_string(ranks));
  return {dim, rank * (n / ranks), n / ranks};
}

TensorSlice rank_slice(const parallel::Communicator& group, std::int64_t n, int dim) {
  return rank_slice(group.rank(), group.size(), n, dim);
}

namespace {

// Every rank's partial sums of squares added up: the whole rows' sums.
Tensor row_sums(parallel::Communicator& group, const Tensor& x) {
  Tensor sums = ops::sum_squares(x);
  parallel::all_reduce_sum_on_device(group, sums);
  return sums;
}

}  // namespace

Tensor rms_norm_across_ranks(parallel::Communicator& group, const Tensor& x, std::int64_t width, float eps,
                             const Tensor& gain) {
  return ops::rms_norm_with_sums(x, row_sums(group, x), width, eps, gain);
}

Tensor rms_norm_rope_across_ranks(parallel::Communicator& group, const Tensor& x, std::int64_t width, float eps,
                                  const Tensor& gain, const Tensor& cos, const Tensor& sin) {
  return ops::rms_norm_rope_interleaved_with_sums(x, row_sums(group, x), width, eps, gain, cos, sin);
}

}  // namespace dattn::models
