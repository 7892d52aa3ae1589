#pragma once
// Y[M, N] = X[M, K] · W[N, K]ᵀ (+ bias[N]) through cuBLASLt, all row-major and of one dtype (fp32, bf16
// or fp16), float32 accumulation and compute (no TF32). Plain C++ header; implemented in linear.cu.
#include <cstddef>
#include <cstdint>

#include "dattn/core/dtype.h"

namespace dattn::ops::cuda {

// What the epilogue applies after the bias, in float32 before the one rounding to the output dtype.
// GeluTanh is cuBLASLt's GELU epilogue: the tanh approximation (ops::gelu_tanh's formula; the CUDA
// tests hold it to the float64 reference at float32 precision).
enum class GemmEpilogue { None, GeluTanh };

// M, N, K > 0. Pointers are device memory; `bias` may be null. Asynchronous on the current run
// context's stream, with that context's cuBLASLt handle, workspace and plans.
void gemm_xwt(const void* x, const void* w, const void* bias, void* y, std::int64_t m, std::int64_t n, std::int64_t k,
              DType dtype, GemmEpilogue epilogue = GemmEpilogue::None);

// Makes the current context's cuBLASLt handle and workspace now, if it has none (else the first GEMM
// does), holding the context's lock only to store them: safe beside other work on the context.
void prepare_gemm();

}  // namespace dattn::ops::cuda
