#pragma once
// FP8 linear on the CPU (ops/linear_fp8.h): the quantization exactly as the GPU does it, then a float32
// GEMM of the e4m3 values and the same scale epilogue. Host tensors only.
#include "dattn/ops/linear_fp8.h"

namespace dattn::ops::cpu {

Fp8Matrix quantize_rows_e4m3(const Tensor& x);
Tensor linear_fp8(const Fp8Activation& x, const Fp8Matrix& weight, const Tensor& bias, bool gelu);

}  // namespace dattn::ops::cpu
