#pragma once
// cuBLASLt helpers for the layers that run GEMMs through it (ops' linears, TORCH_SDPA's GEMM kernel):
// a failed call throws naming the op and the call; the alignment cuBLASLt's kernels may assume of a
// pointer. Header only: core itself does not link cuBLASLt.
#include <cublasLt.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace dattn::cuda {

inline void check_cublaslt(cublasStatus_t s, const char* op, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(op) + " (cuda): " + call + " failed: " + cublasLtGetStatusString(s));
}

// The largest power of two up to 256 dividing the address.
inline int pointer_alignment(const void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  int al = 256;
  while (al > 1 && a % al) al /= 2;
  return al;
}

}  // namespace dattn::cuda
