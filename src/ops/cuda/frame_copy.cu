// The convolutions' bias, and the stream-ordered copies and fills that assemble a causal convolution's
// input stream.
#include "ops/cuda/frame_kernels.h"
#include "ops/cuda/common.cuh"

namespace dattn::ops::cuda {
namespace {

__global__ void bias_kernel(float* y, const float* bias, i64 n, int c) {
  for (i64 i = i64{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += i64{gridDim.x} * blockDim.x) y[i] += bias[i % c];
}

}  // namespace

void add_bias(float* y, const float* bias, i64 pixels, int c) {
  const i64 n = pixels * c;
  if (n == 0) return;
  constexpr int kThreads = 256;
  const cudaStream_t stream = current_stream();
  bias_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(y, bias, n, c);
  check_launch("conv3d bias");
}

void copy_async(void* dst, const void* src, std::size_t bytes) {
  if (bytes) DATTN_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, current_stream()));
}

void fill_async(void* dst, int byte, std::size_t bytes) {
  if (bytes) DATTN_CUDA_CHECK(cudaMemsetAsync(dst, byte, bytes, current_stream()));
}

}  // namespace dattn::ops::cuda
