#pragma once
// Y[M, N] = X[M, K] · W[N, K]ᵀ (+ bias[N]) through cuBLASLt, all row-major and of one dtype (fp32, bf16
// or fp16), float32 accumulation and compute (no TF32). Plain C++ header; implemented in linear.cu.
#include <cstddef>
#include <cstdint>

#include "dattn/core/dtype.h"

namespace dattn::ops::cuda {

// M, N, K > 0. Pointers are device memory; `bias` may be null. Asynchronous on the current run
// context's stream, with that context's cuBLASLt handle, workspace and plans.
void gemm_xwt(const void* x, const void* w, const void* bias, void* y, std::int64_t m, std::int64_t n, std::int64_t k,
              DType dtype);

}  // namespace dattn::ops::cuda
