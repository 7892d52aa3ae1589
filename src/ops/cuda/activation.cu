// gelu_tanh, gelu (erf) and silu: one pass over the elements, 8 per thread (16-byte accesses) when aligned.
#include "ops/cuda/common.cuh"
#include "ops/cuda/cuda_ops.h"

namespace dattn::ops::cuda {
namespace {

enum class Act { GeluTanh, Gelu, Silu };

// 0.5 x (1 + tanh(u)) = x * sigmoid(2u) = x / (1 + exp(-2u)): the same function without tanh's cost and
// without the cancellation of 1 + tanh(u) for negative u; expf keeps it within a few ulp of the CPU.
template <Act A>
__device__ __forceinline__ float act(float x) {
  if (A == Act::GeluTanh) {
    const float k = 0.7978845608028654f;  // sqrt(2 / pi)
    const float u = k * (x + 0.044715f * x * x * x);
    return x / (1.0f + expf(-2.0f * u));
  }
  if (A == Act::Gelu) return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
  return x / (1.0f + expf(-x));
}

template <Act A>
__global__ void act_kernel(const void* x, void* y, Elt e, i64 n, bool vec) {
  const i64 stride = i64{gridDim.x} * blockDim.x;
  const i64 first = i64{blockIdx.x} * blockDim.x + threadIdx.x;
  if (vec) {
    const i64 nvec = n / 8;
    for (i64 v = first; v < nvec; v += stride) {
      float r[8];
      load8(x, e, v * 8, r);
#pragma unroll
      for (int k = 0; k < 8; ++k) r[k] = act<A>(r[k]);
      store8(y, e, v * 8, r);
    }
    for (i64 i = nvec * 8 + first; i < n; i += stride) store1(y, e, i, act<A>(load1(x, e, i)));
  } else {
    for (i64 i = first; i < n; i += stride) store1(y, e, i, act<A>(load1(x, e, i)));
  }
}

template <Act A>
Tensor run(const Tensor& x, const char* op) {
  Tensor y = Tensor::empty(x.shape(), x.dtype(), Device::CUDA);
  const i64 n = x.numel();
  if (n == 0) return y;
  const bool vec = can_vec8(x.data(), x.dtype()) && can_vec8(y.data(), y.dtype());
  constexpr int kThreads = 256;
  const cudaStream_t stream = current_stream();
  act_kernel<A><<<grid_for(vec ? (n + 7) / 8 : n, kThreads), kThreads, 0, stream>>>(x.data(), y.data(), elt_of(x.dtype()), n, vec);
  check_launch(op);
  return y;
}

}  // namespace

Tensor gelu_tanh(const Tensor& x) { return run<Act::GeluTanh>(x, "gelu_tanh"); }
Tensor gelu(const Tensor& x) { return run<Act::Gelu>(x, "gelu"); }
Tensor silu(const Tensor& x) { return run<Act::Silu>(x, "silu"); }

}  // namespace dattn::ops::cuda
