// Element-wise steps of the Wan VAE decoder on CUDA: residual adds, the convolutions' bias, and the
// stream-ordered copies and fills that assemble a causal convolution's input.
#include "models/wan_vae/cuda/kernels.h"
#include "ops/cuda/common.cuh"

namespace dattn::wan_vae::gpu {
namespace {

__global__ void add_vec4(float4* a, const float4* b, i64 n4) {
  for (i64 i = i64{blockIdx.x} * blockDim.x + threadIdx.x; i < n4; i += i64{gridDim.x} * blockDim.x) {
    float4 x = a[i];
    const float4 y = b[i];
    x.x += y.x, x.y += y.y, x.z += y.z, x.w += y.w;
    a[i] = x;
  }
}

__global__ void add_scalar(float* a, const float* b, i64 n) {
  for (i64 i = i64{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += i64{gridDim.x} * blockDim.x) a[i] += b[i];
}

__global__ void bias_kernel(float* y, const float* bias, i64 n, int c) {
  for (i64 i = i64{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += i64{gridDim.x} * blockDim.x) y[i] += bias[i % c];
}

}  // namespace

void add_inplace(float* a, const float* b, i64 n) {
  if (n == 0) return;
  constexpr int kThreads = 256;
  const cudaStream_t stream = dattn::cuda::current_stream();
  if (n % 4 == 0 && reinterpret_cast<std::uintptr_t>(a) % 16 == 0 && reinterpret_cast<std::uintptr_t>(b) % 16 == 0)
    add_vec4<<<ops::cuda::grid_for(n / 4, kThreads), kThreads, 0, stream>>>(reinterpret_cast<float4*>(a),
                                                                 reinterpret_cast<const float4*>(b), n / 4);
  else
    add_scalar<<<ops::cuda::grid_for(n, kThreads), kThreads, 0, stream>>>(a, b, n);
  ops::cuda::check_launch("wan_vae add");
}

void add_bias(float* y, const float* bias, i64 pixels, int c) {
  const i64 n = pixels * c;
  if (n == 0) return;
  constexpr int kThreads = 256;
  const cudaStream_t stream = dattn::cuda::current_stream();
  bias_kernel<<<ops::cuda::grid_for(n, kThreads), kThreads, 0, stream>>>(y, bias, n, c);
  ops::cuda::check_launch("wan_vae conv bias");
}

void copy_async(void* dst, const void* src, std::size_t bytes) {
  if (bytes) DATTN_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, dattn::cuda::current_stream()));
}

void fill_async(void* dst, int byte, std::size_t bytes) {
  if (bytes) DATTN_CUDA_CHECK(cudaMemsetAsync(dst, byte, bytes, dattn::cuda::current_stream()));
}

}  // namespace dattn::wan_vae::gpu
