#pragma once
// Column-major strided-batched GEMMs with a float32 result through cuBLASLt, for TORCH_SDPA's GEMM
// kernel (sdpa_gemm.cu). Plain C++ header: the stream is a cudaStream_t passed as void*.
#include <cstdint>
#include <string>

#include "dattn/core/dtype.h"

namespace dattn::sdpa {

// C[m, n] = alpha * op(A)[m, k] · B[k, n], `batch` times, matrix i at base + i * stride of each
// operand. A is stored [k, m] (trans_a) or [m, k]; B [k, n]; C [m, n] float32; ld* are the column
// strides, in elements. A and B share `dtype` (fp32, bf16 or fp16); float32 accumulation and compute,
// never TF32, so an fp32 product is exact fp32 arithmetic and a 16-bit one has exact products.
struct StridedGemm {
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  DType dtype = DType::F32;
  bool trans_a = false;
  const void* a = nullptr;
  std::int64_t lda = 0, stride_a = 0;
  const void* b = nullptr;
  std::int64_t ldb = 0, stride_b = 0;
  float* c = nullptr;
  std::int64_t ldc = 0, stride_c = 0;
  float alpha = 1.0f;
  // The byte alignment every matrix of each operand keeps (a power of two up to 256): the plan may
  // assume it, so it must hold for every call that shares the plan.
  int align_a = 256, align_b = 256, align_c = 256;
};

// Empty when cuBLASLt has an algorithm for the GEMM's shape, types and alignments (pointers are not
// read), else why not. Plans are cached per run context, so asking is cheap after the first time.
std::string strided_gemm_refusal(const StridedGemm& gemm);
// Queues the GEMM on `stream` (a cudaStream_t) without waiting; throws when it has no algorithm.
void run_strided_gemm(const StridedGemm& gemm, void* stream);

}  // namespace dattn::sdpa
