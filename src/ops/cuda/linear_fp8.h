#pragma once
// FP8 linear on CUDA (ops/linear_fp8.h). Plain C++, as cuda_ops.h: asynchronous on the current run
// context's stream.
#include "dattn/ops/linear_fp8.h"

namespace dattn::ops::cuda {

Fp8Matrix quantize_rows_e4m3(const Tensor& x);
Tensor linear_fp8(const Fp8Activation& x, const Fp8Matrix& weight, const Tensor& bias, bool gelu);
Fp8Activation linear_fp8_gelu_tanh_quantized(const Fp8Activation& x, const Fp8Matrix& weight, const Tensor& bias);

}  // namespace dattn::ops::cuda
