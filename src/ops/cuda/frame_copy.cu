// The convolutions' bias, and the stream-ordered copies, fills and the edge-replicating padding that
// assemble a causal convolution's input stream.
#include <cstdint>
#include <type_traits>

#include "ops/cuda/frame_kernels.h"
#include "ops/cuda/common.cuh"

namespace dattn::ops::cuda {
namespace {

__global__ void bias_kernel(void* y, Elt e, const float* bias, i64 n, int c) {
  for (i64 i = i64{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += i64{gridDim.x} * blockDim.x)
    store1(y, e, i, load1(y, e, i) + bias[i % c]);
}

// The same for rows of c % 8 == 0 channels, 8 values per thread with 32-bit index math (n8 < 2^31 groups of
// 8): a 64-bit modulo per element made the scalar kernel instruction-bound, ~9% of a bf16 VAE decode.
__global__ void bias8_kernel(void* y, Elt e, const float* bias, std::uint32_t n8, std::uint32_t c8) {
  for (std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n8; i += gridDim.x * blockDim.x) {
    const float* b = bias + (i % c8) * 8;
    float v[8];
    load8(y, e, i64{i} * 8, v);
#pragma unroll
    for (int k = 0; k < 8; ++k) v[k] += b[k];
    store8(y, e, i64{i} * 8, v);
  }
}

// dst pixel (y, x) of a frame padded by p reads src pixel (clamp(y - p), clamp(x - p)); one V (16, 4 or 2
// bytes) per thread, a pixel's row of channels `row_units` Vs long.
template <typename V>
__global__ void pad_replicate_kernel(const V* src, V* dst, i64 frames, i64 h, i64 w, i64 row_units, int p) {
  const i64 cv = row_units, ph = h + 2 * p, pw = w + 2 * p;
  const i64 n = frames * ph * pw * cv;
  for (i64 i = i64{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += i64{gridDim.x} * blockDim.x) {
    const i64 ch = i % cv, pix = i / cv, x = pix % pw, y = pix / pw % ph, f = pix / (pw * ph);
    const i64 sy = min(max(y - p, i64{0}), h - 1), sx = min(max(x - p, i64{0}), w - 1);
    dst[i] = src[((f * h + sy) * w + sx) * cv + ch];
  }
}

template <typename V>
void launch_pad(const void* src, void* dst, i64 frames, i64 h, i64 w, i64 row_bytes, int p) {
  constexpr int kThreads = 256;
  const i64 units = row_bytes / static_cast<i64>(sizeof(V));
  const i64 n = frames * (h + 2 * p) * (w + 2 * p) * units;
  pad_replicate_kernel<V><<<grid_for(n, kThreads), kThreads, 0, current_stream()>>>(
      static_cast<const V*>(src), static_cast<V*>(dst), frames, h, w, units, p);
}

}  // namespace

void pad_frames_replicate(const void* src, void* dst, std::size_t elem_bytes, i64 frames, i64 h, i64 w, i64 c, int p) {
  if (frames * (h + 2 * p) * (w + 2 * p) * c == 0) return;
  // The widest unit that divides a pixel's row and both pointers' alignment: float4 for fp32 rows of
  // c % 4 == 0 (as before) and bf16 rows of c % 8 == 0.
  const i64 row = c * static_cast<i64>(elem_bytes);
  const auto fits = [&](std::uintptr_t unit) {
    return row % static_cast<i64>(unit) == 0 && reinterpret_cast<std::uintptr_t>(src) % unit == 0 &&
           reinterpret_cast<std::uintptr_t>(dst) % unit == 0;
  };
  if (fits(16))
    launch_pad<uint4>(src, dst, frames, h, w, row, p);
  else if (fits(4))
    launch_pad<std::uint32_t>(src, dst, frames, h, w, row, p);
  else
    launch_pad<std::uint16_t>(src, dst, frames, h, w, row, p);
  check_launch("pad_frames_replicate");
}

void add_bias(void* y, DType y_dtype, const float* bias, i64 pixels, int c) {
  const i64 n = pixels * c;
  if (n == 0) return;
  constexpr int kThreads = 256;
  const cudaStream_t stream = current_stream();
  if (c % 8 == 0 && n / 8 < (i64{1} << 31) && can_vec8(y, y_dtype))
    bias8_kernel<<<grid_for(n / 8, kThreads), kThreads, 0, stream>>>(y, elt_of(y_dtype), bias,
                                                                    static_cast<std::uint32_t>(n / 8),
                                                                    static_cast<std::uint32_t>(c / 8));
  else
    bias_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(y, elt_of(y_dtype), bias, n, c);
  check_launch("conv3d bias");
}

void copy_async(void* dst, const void* src, std::size_t bytes) {
  if (bytes) DATTN_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, current_stream()));
}

void fill_async(void* dst, int byte, std::size_t bytes) {
  if (bytes) DATTN_CUDA_CHECK(cudaMemsetAsync(dst, byte, bytes, current_stream()));
}

}  // namespace dattn::ops::cuda
