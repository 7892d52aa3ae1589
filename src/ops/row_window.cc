// copy_into: each batch item's rows are one contiguous block in y and in the window, so one
// Tensor::copy_from per item (queued on the run context's stream for CUDA tensors).
#include "dattn/ops/row_window.h"

#include "dattn/core/stage_timer.h"
#include "ops/checks.h"

namespace dattn::ops {

void copy_into(const Tensor& y, const RowWindow& window) {
  const StageScope timed("copy_rows");
  constexpr const char* op = "copy_into";
  detail::require_defined(op, "y", y);
  detail::require_window(op, y, y.shape(), window);
  if (y.numel() == 0) return;
  const std::int64_t items = y.dim(0), seq = y.dim(1), out_seq = window.out.dim(1);
  const std::int64_t row = y.numel() / (items * seq);  // elements per token
  const Tensor src = y.reshape({items * seq, row});
  Tensor dst = window.out.reshape({items * out_seq, row});  // a view of the caller's storage
  for (std::int64_t b = 0; b < items; ++b) dst.narrow0(b * out_seq + window.row, seq).copy_from(src.narrow0(b * seq, seq));
}

}  // namespace dattn::ops
