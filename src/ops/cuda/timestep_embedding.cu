// Sinusoidal timestep embedding on CUDA, step for step as the CPU op (src/ops/cpu/timestep_embedding.cc):
// float32 exponent, exp / sin / cos evaluated in double and rounded once to float32, and the argument a
// float32 product, so both devices give the same bits in nearly every element.
#include <cmath>

#include "ops/cuda/common.cuh"
#include "ops/cuda/cuda_ops.h"

namespace dattn::ops::cuda {
namespace {

__global__ void timestep_kernel(const void* t, Elt et, float* out, i64 n, int dim, float neg_log_period, float denom,
                                float scale, bool flip) {
  const int half = dim / 2;
  const i64 stride = i64{gridDim.x} * blockDim.x;
  for (i64 e = i64{blockIdx.x} * blockDim.x + threadIdx.x; e < n * dim; e += stride) {
    const i64 r = e / dim;
    const int col = static_cast<int>(e - r * dim);
    if (col >= 2 * half) {  // the zero column of an odd width
      out[e] = 0.0f;
      continue;
    }
    const int i = col < half ? col : col - half;
    const bool first_half = col < half;
    // __fdiv_rn / __fmul_rn: no contraction into FMA, the same roundings as the host code.
    const float exponent = __fdiv_rn(__fmul_rn(neg_log_period, static_cast<float>(i)), denom);
    const float freq = static_cast<float>(exp(static_cast<double>(exponent)));
    const float tf = load1(t, et, r);  // fp64 timesteps round to float32 here, as on the CPU
    const float arg = __fmul_rn(scale, __fmul_rn(tf, freq));
    const bool want_cos = first_half == flip;  // [cos, sin] when flip_sin_to_cos
    out[e] = static_cast<float>(want_cos ? cos(static_cast<double>(arg)) : sin(static_cast<double>(arg)));
  }
}

}  // namespace

Tensor timestep_embedding(const Tensor& t, const TimestepEmbeddingParams& p) {
  const i64 n = t.numel();
  Tensor y = Tensor::empty({n, p.dim}, DType::F32, Device::CUDA);
  if (n == 0) return y;
  const i64 half = p.dim / 2;
  const float neg_log_period = static_cast<float>(-std::log(double(p.max_period)));
  const float denom = static_cast<float>(half) - p.downscale_freq_shift;
  constexpr int kThreads = 256;
  const cudaStream_t stream = current_stream();
  timestep_kernel<<<grid_for(n * p.dim, kThreads), kThreads, 0, stream>>>(t.data(), elt_of(t.dtype()), y.data_as<float>(), n,
                                                               p.dim, neg_log_period, denom, p.scale,
                                                               p.flip_sin_to_cos);
  check_launch("timestep_embedding");
  return y;
}

}  // namespace dattn::ops::cuda
