#pragma once
// DATTN_CUDA_CHECK(call): throws std::runtime_error naming the call, file, line and CUDA error.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#define DATTN_CUDA_CHECK(call)                                                                       \
  do {                                                                                               \
    cudaError_t dattn_err_ = (call);                                                                 \
    if (dattn_err_ != cudaSuccess)                                                                   \
      throw std::runtime_error(std::string(#call) + " failed at " + __FILE__ + ":" +                 \
                               std::to_string(__LINE__) + ": " + cudaGetErrorString(dattn_err_));    \
  } while (0)
