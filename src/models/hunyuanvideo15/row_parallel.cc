// The dual-stream blocks' row-parallel projections (see row_parallel.h).
#include "models/hunyuanvideo15/row_parallel.h"

#include "dattn/ops/elementwise.h"

namespace dattn::hv15 {
namespace {

// The partial output summed over the group, then the bias once.
Tensor sum_then_bias(parallel::Communicator& group, Tensor partial, const Tensor& bias) {
  parallel::all_reduce_sum_on_device(group, partial);
  return ops::add(partial, bias);
}

Linear without_bias(const Linear& layer) {
  Linear l = layer;
  l.bias = Tensor();
  return l;
}

}  // namespace

Tensor apply_row_parallel(parallel::Communicator* group, const Linear& layer, const Tensor& x) {
  if (!group) return apply(layer, x);
  return sum_then_bias(*group, apply(without_bias(layer), x), layer.bias);
}

Tensor apply_rows_row_parallel(parallel::Communicator* group, const Linear& layer, const ops::RowWindow& x_rows,
                               std::int64_t rows) {
  if (!group) return apply_rows(layer, x_rows, rows);
  return sum_then_bias(*group, apply_rows(without_bias(layer), x_rows, rows), layer.bias);
}

}  // namespace dattn::hv15
