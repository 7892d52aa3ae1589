#pragma once
// Tensor parallel in the Wan blocks (the split: dattn/models/wan/tensor_parallel.h): the row-parallel
// projections, whose partial outputs are summed over the group with the bias added once after the sum.
#include "dattn/core/tensor.h"
#include "dattn/parallel/communicator.h"
#include "models/wan/weights.h"

namespace dattn::wan {

// A row-parallel linear: this rank's columns of the input against its columns of the weight, the
// partial outputs summed over `group`, then the bias. `group` null: apply(layer, x).
Tensor apply_row_parallel(parallel::Communicator* group, const Linear& layer, const Tensor& x);

}  // namespace dattn::wan
