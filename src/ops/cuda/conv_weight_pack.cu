// [cout, cin, taps] (any float dtype as stored) -> [cout, taps, cin] float32 on the GPU: a VAE's
// convolutions are packed at load from the bytes uploaded as they are in the file, instead of being
// widened, packed and uploaded in float32 by the host.
#include "ops/cuda/conv_weight_pack.h"

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "core/cuda/check.cuh"
#include "core/cuda/dtype_convert.cuh"
#include "core/cuda/stream.cuh"

namespace dattn::ops::cuda {
namespace {

using i64 = std::int64_t;

__device__ __forceinline__ float widen(const void* src, DType dtype, i64 i) {
  if (dtype == DType::F32) return static_cast<const float*>(src)[i];
  const std::uint16_t bits = static_cast<const std::uint16_t*>(src)[i];
  return dtype == DType::BF16 ? dattn::cuda::bf16_bits_to_f32(bits) : dattn::cuda::f16_bits_to_f32(bits);
}

// One thread per packed element: the writes are coalesced, the strided reads hit L2 (a load-time pass).
__global__ void pack_kernel(const void* src, DType dtype, float* dst, i64 cin, i64 taps, i64 n) {
  const i64 stride = i64(gridDim.x) * blockDim.x;
  for (i64 j = i64(blockIdx.x) * blockDim.x + threadIdx.x; j < n; j += stride) {
    const i64 o = j / (taps * cin), rest = j % (taps * cin);
    const i64 t = rest / cin, i = rest % cin;
    dst[j] = widen(src, dtype, (o * cin + i) * taps + t);
  }
}

}  // namespace

void pack_conv_weight(const void* src, DType dtype, float* dst, i64 cout, i64 cin, i64 taps) {
  if (dtype != DType::F32 && dtype != DType::BF16 && dtype != DType::F16)
    throw std::logic_error("pack_conv_weight: weight dtype " + std::string(dtype_name(dtype)) +
                           ": expected fp32, bf16 or fp16");
  const i64 n = cout * cin * taps;
  if (n <= 0) return;
  constexpr int kThreads = 256;
  const i64 want = (n + kThreads - 1) / kThreads;
  const unsigned blocks = static_cast<unsigned>(want < 65536 ? want : 65536);
  pack_kernel<<<blocks, kThreads, 0, dattn::cuda::current_stream()>>>(src, dtype, dst, cin, taps, n);
  DATTN_CUDA_CHECK(cudaGetLastError());
}

}  // namespace dattn::ops::cuda
