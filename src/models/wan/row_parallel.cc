// The Wan blocks' row-parallel projections (see row_parallel.h).
#include "models/wan/row_parallel.h"

#include "dattn/ops/elementwise.h"

namespace dattn::wan {

Tensor apply_row_parallel(parallel::Communicator* group, const Linear& layer, const Tensor& x) {
  if (!group) return apply(layer, x);
  Linear partial = layer;
  partial.bias = Tensor();
  Tensor y = apply(partial, x);
  parallel::all_reduce_sum_on_device(*group, y);
  return ops::add(y, layer.bias);
}

}  // namespace dattn::wan
