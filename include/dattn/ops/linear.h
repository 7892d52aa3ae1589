#pragma once
// Dense layers. Every op in include/dattn/ops/ takes and returns Tensors, checks its arguments (a bad
// shape or dtype is a UserError naming the op and the argument) and dispatches on the input's device.
#include "dattn/core/tensor.h"
#include "dattn/ops/row_window.h"

namespace dattn::ops {

// y = x · weightᵀ + bias over the last dimension, as torch.nn.Linear: x [..., in], weight [out, in],
// bias [out] or undefined. y has x's leading dimensions, device and dtype. CPU: one float32 GEMM
// (OpenBLAS); bf16 and fp16 operands are widened to float32 and the result is rounded once.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());
// gelu_tanh(linear(x, weight, bias)) in one pass: on CUDA the GELU (tanh approximation) is applied by the
// GEMM's epilogue (cuBLASLt), so 16-bit results can differ from the two-op form by about one rounding;
// float32 results agree to float32 precision. The CPU form is the two ops.
Tensor linear_gelu_tanh(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());
// linear written into rows of `into` (x [B, S, ..., in]; into.out [B, S_out, ..., out]).
void linear(const Tensor& x, const Tensor& weight, const Tensor& bias, const RowWindow& into);
// linear of rows [row, row + rows) of every batch item of x_rows.out ([B, S, in]): y [B, rows, out], equal to
// linear(copy_from(x_rows, rows), ...). On CUDA the GEMMs read the rows in place (one per batch item).
Tensor linear(const RowWindow& x_rows, std::int64_t rows, const Tensor& weight, const Tensor& bias = Tensor());

}  // namespace dattn::ops
