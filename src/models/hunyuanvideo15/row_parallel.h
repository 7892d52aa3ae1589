#pragma once
// Tensor parallel in the dual-stream blocks (the split: dattn/models/hunyuanvideo15/tensor_parallel.h):
// the row-parallel projections, whose partial outputs are summed over the group with the bias added once
// after the sum.
#include <cstdint>

#include "dattn/core/tensor.h"
#include "dattn/ops/row_window.h"
#include "dattn/parallel/communicator.h"
#include "models/hunyuanvideo15/weights.h"

namespace dattn::hv15 {

// This rank's columns of x against its columns of the weight, summed over `group`, then the bias.
// `group` null: apply(layer, x).
Tensor apply_row_parallel(parallel::Communicator* group, const Linear& layer, const Tensor& x);
// The same over rows [x_rows.row, + rows) of each batch item (apply_rows).
Tensor apply_rows_row_parallel(parallel::Communicator* group, const Linear& layer, const ops::RowWindow& x_rows,
                               std::int64_t rows);

}  // namespace dattn::hv15
