// Interleaved rotary embedding on CUDA: 4 pairs (8 elements) per thread when the head dim allows.
#include "ops/cuda/common.cuh"
#include "ops/cuda/cuda_ops.h"

namespace dattn::ops::cuda {
namespace {

// x [B, S, H, D]; cos, sin [S, D] float32. cos is read at even columns, sin at odd ones (see rope.h).
__global__ void rope_kernel(const void* x, void* y, Elt e, const float* cos, const float* sin, i64 s, i64 h, i64 d,
                            i64 n, bool vec) {
  const i64 stride = i64{gridDim.x} * blockDim.x;
  const i64 first = i64{blockIdx.x} * blockDim.x + threadIdx.x;
  const i64 hd = h * d;
  if (vec) {
    for (i64 v = first; v < n / 8; v += stride) {
      const i64 i = v * 8;
      const i64 col = i % d, pos = i / hd % s;
      const float* c = cos + pos * d + col;
      const float* sn = sin + pos * d + col;
      const float4 c0 = *reinterpret_cast<const float4*>(c), c1 = *reinterpret_cast<const float4*>(c + 4);
      const float4 s0 = *reinterpret_cast<const float4*>(sn), s1 = *reinterpret_cast<const float4*>(sn + 4);
      const float cv[4] = {c0.x, c0.z, c1.x, c1.z}, sv[4] = {s0.y, s0.w, s1.y, s1.w};
      float a[8];
      load8(x, e, i, a);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float x1 = a[2 * j], x2 = a[2 * j + 1];
        a[2 * j] = x1 * cv[j] - x2 * sv[j];
        a[2 * j + 1] = x1 * sv[j] + x2 * cv[j];
      }
      store8(y, e, i, a);
    }
    return;
  }
  for (i64 pair = first; pair < n / 2; pair += stride) {
    const i64 i = pair * 2;
    const i64 col = i % d, pos = i / hd % s;
    const float cv = cos[pos * d + col], sv = sin[pos * d + col + 1];
    const float x1 = load1(x, e, i), x2 = load1(x, e, i + 1);
    store1(y, e, i, x1 * cv - x2 * sv);
    store1(y, e, i + 1, x1 * sv + x2 * cv);
  }
}

}  // namespace

Tensor apply_rope_interleaved(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  Tensor y = Tensor::empty(x.shape(), x.dtype(), Device::CUDA);
  const i64 n = x.numel(), s = x.dim(1), h = x.dim(2), d = x.dim(3);
  if (n == 0) return y;
  // The tables' rows start at multiples of D floats, 16-byte aligned when D % 8 == 0.
  const bool vec = d % 8 == 0 && can_vec8(x.data(), x.dtype()) && can_vec8(y.data(), y.dtype()) &&
                   can_vec8(cos.data(), DType::F32) && can_vec8(sin.data(), DType::F32);
  constexpr int kThreads = 256;
  const cudaStream_t stream = current_stream();
  rope_kernel<<<grid_for(vec ? n / 8 : n / 2, kThreads), kThreads, 0, stream>>>(x.data(), y.data(), elt_of(x.dtype()),
                                                                       cos.data_as<float>(), sin.data_as<float>(), s,
                                                                       h, d, n, vec);
  check_launch("apply_rope_interleaved");
  return y;
}

}  // namespace dattn::ops::cuda

namespace dattn::ops::cuda {
namespace {

// Rotate-half form (see rope.h): element i of a head pairs with i + D/2 (first half) or i - D/2.
__global__ void rope_rotate_half_kernel(const void* x, void* y, Elt e, const float* cos, const float* sin, i64 s,
                                        i64 h, i64 d, i64 n) {
  const i64 stride = i64{gridDim.x} * blockDim.x;
  const i64 half = d / 2, hd = h * d;
  for (i64 i = i64{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
    const i64 col = i % d, pos = i / hd % s;
    const float cv = cos[pos * d + col], sv = sin[pos * d + col];
    const float xi = load1(x, e, i);
    const float partner = load1(x, e, col < half ? i + half : i - half);
    const float a = xi * cv, r = partner * sv;
    store1(y, e, i, col < half ? a - r : a + r);
  }
}

}  // namespace

Tensor apply_rope_rotate_half(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  Tensor y = Tensor::empty(x.shape(), x.dtype(), Device::CUDA);
  const i64 n = x.numel(), s = x.dim(1), h = x.dim(2), d = x.dim(3);
  if (n == 0) return y;
  constexpr int kThreads = 256;
  rope_rotate_half_kernel<<<grid_for(n, kThreads), kThreads, 0, current_stream()>>>(
      x.data(), y.data(), elt_of(x.dtype()), cos.data_as<float>(), sin.data_as<float>(), s, h, d, n);
  check_launch("apply_rope_rotate_half");
  return y;
}

}  // namespace dattn::ops::cuda
