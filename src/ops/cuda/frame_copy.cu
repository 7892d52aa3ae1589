// The convolutions' bias, and the stream-ordered copies, fills and the edge-replicating padding that
// assemble a causal convolution's input stream.
#include <cstdint>
#include <type_traits>

#include "ops/cuda/frame_kernels.h"
#include "ops/cuda/common.cuh"

namespace dattn::ops::cuda {
namespace {

__global__ void bias_kernel(float* y, const float* bias, i64 n, int c) {
  for (i64 i = i64{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += i64{gridDim.x} * blockDim.x) y[i] += bias[i % c];
}

// dst pixel (y, x) of a frame padded by p reads src pixel (clamp(y - p), clamp(x - p)); kVec channels
// (1 or 4) per thread, c % kVec == 0.
template <int kVec>
__global__ void pad_replicate_kernel(const float* src, float* dst, i64 frames, i64 h, i64 w, i64 c, int p) {
  using V = std::conditional_t<kVec == 4, float4, float>;
  const i64 cv = c / kVec, ph = h + 2 * p, pw = w + 2 * p;
  const i64 n = frames * ph * pw * cv;
  for (i64 i = i64{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += i64{gridDim.x} * blockDim.x) {
    const i64 ch = i % cv, pix = i / cv, x = pix % pw, y = pix / pw % ph, f = pix / (pw * ph);
    const i64 sy = min(max(y - p, i64{0}), h - 1), sx = min(max(x - p, i64{0}), w - 1);
    reinterpret_cast<V*>(dst)[i] = reinterpret_cast<const V*>(src)[((f * h + sy) * w + sx) * cv + ch];
  }
}

}  // namespace

void pad_frames_replicate(const float* src, float* dst, i64 frames, i64 h, i64 w, i64 c, int p) {
  const i64 n = frames * (h + 2 * p) * (w + 2 * p) * c;
  if (n == 0) return;
  constexpr int kThreads = 256;
  const cudaStream_t stream = current_stream();
  const bool vec = c % 4 == 0 && reinterpret_cast<std::uintptr_t>(src) % 16 == 0 &&
                   reinterpret_cast<std::uintptr_t>(dst) % 16 == 0;
  if (vec)
    pad_replicate_kernel<4><<<grid_for(n / 4, kThreads), kThreads, 0, stream>>>(src, dst, frames, h, w, c, p);
  else
    pad_replicate_kernel<1><<<grid_for(n, kThreads), kThreads, 0, stream>>>(src, dst, frames, h, w, c, p);
  check_launch("pad_frames_replicate");
}

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
