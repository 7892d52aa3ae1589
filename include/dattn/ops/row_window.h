#pragma once
// Results written into a window of rows of a larger tensor: out[b, row + s, ...] = y[b, s, ...] for every
// batch item b and s < y.dim(1), the other rows untouched. HunyuanVideo-1.5's joint attention takes video
// then text tokens as one sequence; writing each stream's queries, keys and values straight into their
// rows of the joint tensors saves copying all three in every block. The ops that take a RowWindow
// (linear, rms_norm, rms_norm_rope_interleaved) compute exactly what their tensor-returning forms do.
#include <cstdint>

#include "dattn/core/tensor.h"

namespace dattn::ops {

struct RowWindow {
  Tensor out;            // [B, S_out, ...]: a handle, so the writes land in the caller's tensor
  std::int64_t row = 0;  // the window's first row along dimension 1
};

// Copies y [B, S, ...] into the window: y and out of one dtype and device, equal but for dimension 1,
// row + S <= S_out.
void copy_into(const Tensor& y, const RowWindow& window);
// The reverse: rows [row, row + rows) of every batch item of window.out, as a new [B, rows, ...] tensor.
Tensor copy_from(const RowWindow& window, std::int64_t rows);

}  // namespace dattn::ops
