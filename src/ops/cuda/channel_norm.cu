// normalize_channels (+ SiLU) on channels-last frames: one warp per pixel, whose channels are contiguous,
// so the sum of squares is a warp reduction and every load is coalesced. float32 in and out keeps its own
// kernels (the fp32 decode's bits); any mix with bfloat16 storage goes through one kernel reading and
// writing by element type, in float32 arithmetic.
#include "ops/cuda/frame_kernels.h"
#include "ops/cuda/common.cuh"

namespace dattn::ops::cuda {
namespace {

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// F.normalize's max(norm, eps) written as the CPU's std::max, so that a NaN norm stays NaN.
__device__ __forceinline__ float inv_norm(float sum_sq) {
  const float n = sqrtf(sum_sq);
  return 1.0f / (n < 1e-12f ? 1e-12f : n);
}

__device__ __forceinline__ float finish(float v, bool silu) { return silu ? v / (1.0f + expf(-v)) : v; }

// c % 4 == 0: float4 access (pixel rows then start on 16-byte boundaries).
__global__ void normalize_vec4(const float* x, float* y, const float* gain, i64 pixels, int c, bool silu) {
  const int lane = threadIdx.x % 32, c4 = c / 4;
  const i64 warps = i64{gridDim.x} * blockDim.x / 32;
  for (i64 p = (i64{blockIdx.x} * blockDim.x + threadIdx.x) / 32; p < pixels; p += warps) {
    const float4* xp = reinterpret_cast<const float4*>(x + p * c);
    float s = 0.0f;
    for (int i = lane; i < c4; i += 32) {
      const float4 v = xp[i];
      s += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
    }
    const float inv = inv_norm(warp_sum(s));
    float4* yp = reinterpret_cast<float4*>(y + p * c);
    const float4* g = reinterpret_cast<const float4*>(gain);
    for (int i = lane; i < c4; i += 32) {
      const float4 v = xp[i], gi = g[i];
      yp[i] = make_float4(finish(v.x * inv * gi.x, silu), finish(v.y * inv * gi.y, silu),
                          finish(v.z * inv * gi.z, silu), finish(v.w * inv * gi.w, silu));
    }
  }
}

__global__ void normalize_scalar(const float* x, float* y, const float* gain, i64 pixels, int c, bool silu) {
  const int lane = threadIdx.x % 32;
  const i64 warps = i64{gridDim.x} * blockDim.x / 32;
  for (i64 p = (i64{blockIdx.x} * blockDim.x + threadIdx.x) / 32; p < pixels; p += warps) {
    const float* xp = x + p * c;
    float s = 0.0f;
    for (int i = lane; i < c; i += 32) s += xp[i] * xp[i];
    const float inv = inv_norm(warp_sum(s));
    for (int i = lane; i < c; i += 32) y[p * c + i] = finish(xp[i] * inv * gain[i], silu);
  }
}

// Mixed or bf16 storage: one warp per pixel, 8 channels per lane step when kVec8 (c % 8 == 0, both rows
// 16-byte aligned), else one. The row is read twice (sum of squares, then the scaled values), as above.
template <bool kVec8>
__global__ void normalize_typed(const void* x, Elt ex, void* y, Elt ey, const float* gain, i64 pixels, int c,
                                bool silu) {
  const int lane = threadIdx.x % 32;
  const i64 warps = i64{gridDim.x} * blockDim.x / 32;
  for (i64 p = (i64{blockIdx.x} * blockDim.x + threadIdx.x) / 32; p < pixels; p += warps) {
    const i64 row = p * c;
    float s = 0.0f;
    if constexpr (kVec8) {
      for (int i = lane * 8; i < c; i += 32 * 8) {
        float v[8];
        load8(x, ex, row + i, v);
#pragma unroll
        for (int k = 0; k < 8; ++k) s += v[k] * v[k];
      }
    } else {
      for (int i = lane; i < c; i += 32) {
        const float v = load1(x, ex, row + i);
        s += v * v;
      }
    }
    const float inv = inv_norm(warp_sum(s));
    if constexpr (kVec8) {
      for (int i = lane * 8; i < c; i += 32 * 8) {
        float v[8];
        load8(x, ex, row + i, v);
#pragma unroll
        for (int k = 0; k < 8; ++k) v[k] = finish(v[k] * inv * gain[i + k], silu);
        store8(y, ey, row + i, v);
      }
    } else {
      for (int i = lane; i < c; i += 32) store1(y, ey, row + i, finish(load1(x, ex, row + i) * inv * gain[i], silu));
    }
  }
}

}  // namespace

void normalize_channels(const void* x, DType x_dtype, void* y, DType y_dtype, const float* gain, i64 pixels, int c,
                        bool silu) {
  if (pixels == 0 || c == 0) return;
  constexpr int kThreads = 256;
  const cudaStream_t stream = current_stream();
  const unsigned blocks = grid_for(pixels * 32, kThreads);
  if (x_dtype == DType::F32 && y_dtype == DType::F32) {
    const float* xf = static_cast<const float*>(x);
    float* yf = static_cast<float*>(y);
    const bool vec = c % 4 == 0 && reinterpret_cast<std::uintptr_t>(x) % 16 == 0 &&
                     reinterpret_cast<std::uintptr_t>(y) % 16 == 0 && reinterpret_cast<std::uintptr_t>(gain) % 16 == 0;
    if (vec)
      normalize_vec4<<<blocks, kThreads, 0, stream>>>(xf, yf, gain, pixels, c, silu);
    else
      normalize_scalar<<<blocks, kThreads, 0, stream>>>(xf, yf, gain, pixels, c, silu);
  } else {
    const Elt ex = elt_of(x_dtype), ey = elt_of(y_dtype);
    if (can_vec8(x, x_dtype) && can_vec8(y, y_dtype) && c % 8 == 0)
      normalize_typed<true><<<blocks, kThreads, 0, stream>>>(x, ex, y, ey, gain, pixels, c, silu);
    else
      normalize_typed<false><<<blocks, kThreads, 0, stream>>>(x, ex, y, ey, gain, pixels, c, silu);
  }
  check_launch("normalize_channels");
}

}  // namespace dattn::ops::cuda
