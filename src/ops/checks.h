#pragma once
// Argument checks shared by the ops: each failure is a UserError naming the op, the argument, what it
// got and what was expected ("linear: weight [64,32] fp32 cpu: expected 2 dimensions [out, in]").
#include <string>

#include "dattn/core/tensor.h"
#include "dattn/ops/row_window.h"

namespace dattn::ops::detail {

void require_defined(const char* op, const char* arg, const Tensor& t);
// F32, BF16 or F16: the dtypes every op computes on (in float32).
void require_float(const char* op, const char* arg, const Tensor& t);
// F32 only: the frame ops of the causal VAEs compute and store float32.
void require_f32(const char* op, const char* arg, const Tensor& t);
void require_ndim(const char* op, const char* arg, const Tensor& t, int ndim, const char* layout);
void require_shape(const char* op, const char* arg, const Tensor& t, const Shape& expected);
void require_same_device(const char* op, const Tensor& first, const char* arg, const Tensor& t);
// `window` can take the rows of a result of shape y_shape computed from x (row_window.h): out of x's
// dtype and device, of y_shape but for dimension 1, 0 <= row and row + y_shape[1] <= out.dim(1).
void require_window(const char* op, const Tensor& x, const Shape& y_shape, const RowWindow& window);
// The interleaved rotary embedding's tables for x [B, S, G, N]: cos and sin float32 [S, Dr] on x's device,
// Dr even and dividing N.
void require_rope_tables(const char* op, const Tensor& x, const Tensor& cos, const Tensor& sin);
// A norm's input: a float x with a last dimension, eps >= 0.
void require_norm_input(const char* op, const Tensor& x, float eps);
// A norm's parameter vector `arg` (when defined): float, [D] for x [..., D], on x's device.
void require_norm_param(const char* op, const char* arg, const Tensor& x, const Tensor& p);
// A layer norm's weight and bias: both or neither, each a norm parameter.
void require_layer_norm_params(const char* op, const Tensor& x, const Tensor& weight, const Tensor& bias);
// The one message every op gives for a device it has no kernel for yet.
[[noreturn]] void no_kernel(const char* op, Device device);

}  // namespace dattn::ops::detail
