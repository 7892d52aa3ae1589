#pragma once
// cuBLASLt status checks for the GEMM files: a failed call throws, naming the op and the call.
#include <cublasLt.h>

#include <stdexcept>
#include <string>

namespace dattn::ops::cuda {

inline void check_cublaslt(cublasStatus_t s, const char* op, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(op) + " (cuda): " + call + " failed: " + cublasLtGetStatusString(s));
}

}  // namespace dattn::ops::cuda
