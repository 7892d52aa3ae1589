// copy_into and copy_from: each batch item's rows are one contiguous block in y and in the window, so one
// Tensor::copy_from per item (queued on the run context's stream for CUDA tensors).
#include "dattn/ops/row_window.h"

#include <string>

#include "dattn/core/error.h"
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

Tensor copy_from(const RowWindow& window, std::int64_t rows) {
  const StageScope timed("copy_rows");
  constexpr const char* op = "copy_from";
  detail::require_defined(op, "window.out", window.out);
  const Tensor& in = window.out;
  if (in.ndim() < 2) throw UserError(std::string(op) + ": window.out " + in.describe() + ": expected [B, S, ...]");
  if (rows < 0 || window.row < 0 || window.row > in.dim(1) - rows)
    throw UserError(std::string(op) + ": rows [" + std::to_string(window.row) + ", " + std::to_string(window.row + rows) +
                    ") must lie within window.out's " + std::to_string(in.dim(1)));
  Shape shape = in.shape();
  shape[1] = rows;
  Tensor y = Tensor::empty(shape, in.dtype(), in.device());
  if (y.numel() == 0) return y;
  const std::int64_t items = in.dim(0), in_seq = in.dim(1), row = y.numel() / (items * rows);
  const Tensor src = in.reshape({items * in_seq, row});
  Tensor dst = y.reshape({items * rows, row});
  for (std::int64_t b = 0; b < items; ++b) dst.narrow0(b * rows, rows).copy_from(src.narrow0(b * in_seq + window.row, rows));
  return y;
}

}  // namespace dattn::ops
