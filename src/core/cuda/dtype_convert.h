#pragma once
// Elementwise dtype conversion on the GPU for host code without CUDA headers (dtype_convert.cu).
#include <cstddef>

#include "dattn/core/dtype.h"

namespace dattn::cuda {

// Whether convert_async handles from -> to: F32, BF16, F16 to one another (and each to itself).
bool converts(DType from, DType to);
// Queues on `stream` (a cudaStream_t) the conversion of n elements from device memory src (dtype
// `from`) to device memory dst (dtype `to`), rounding as dtype.h does. std::logic_error for a pair
// converts() refuses; std::runtime_error naming the launch when it fails.
void convert_async(const void* src, DType from, void* dst, DType to, std::size_t n, void* stream);

}  // namespace dattn::cuda
