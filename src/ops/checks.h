#pragma once
// Argument checks shared by the ops: each failure is a UserError naming the op, the argument, what it
// got and what was expected ("linear: weight [64,32] fp32 cpu: expected 2 dimensions [out, in]").
#include <string>

#include "dattn/core/tensor.h"

namespace dattn::ops::detail {

void require_defined(const char* op, const char* arg, const Tensor& t);
// F32, BF16 or F16: the dtypes every op computes on (in float32).
void require_float(const char* op, const char* arg, const Tensor& t);
// F32 only: the frame ops of the causal VAEs compute and store float32.
void require_f32(const char* op, const char* arg, const Tensor& t);
void require_ndim(const char* op, const char* arg, const Tensor& t, int ndim, const char* layout);
void require_shape(const char* op, const char* arg, const Tensor& t, const Shape& expected);
void require_same_device(const char* op, const Tensor& first, const char* arg, const Tensor& t);
// The one message every op gives for a device it has no kernel for yet.
[[noreturn]] void no_kernel(const char* op, Device device);

}  // namespace dattn::ops::detail
