#pragma once
// One row's e4m3 quantization (ops/linear_fp8.h) from bf16/fp16 values a block holds in registers, as
// chunks of 8 (chunk c = threadIdx.x + j * blockDim.x): shared by quantize_rows_e4m3's fast kernel and
// the FFN's GELU + requantization kernel, so both write the bytes of the scalar kernel.
#include <cuda_fp8.h>

#include <cstdint>

#include "ops/cuda/common.cuh"

namespace dattn::ops::cuda {

// The largest |v| of the 8 values packed in `raw`, folded into amax (fmaxf: NaN ignored).
__device__ __forceinline__ float amax8(uint4 raw, Elt e, float amax) {
  float v[8];
  unpack8(raw, e, v);
#pragma unroll
  for (int i = 0; i < 8; ++i) amax = fmaxf(amax, fabsf(v[i]));
  return amax;
}

// The row's scale (amax over the block / 448, 1 for an all-zero row) to *scale, its codes to qr
// (8 bytes per chunk) and zeros to the padding chunks [chunks, padded_chunks). Every thread of the block
// calls it (a block reduction); `amax` is this thread's part.
template <int kChunks>
__device__ __forceinline__ void write_e4m3_row(const uint4 (&held)[kChunks], Elt e, float amax, i64 chunks,
                                               i64 padded_chunks, uint2* qr, float* scale, float* scratch) {
  amax = block_max(amax, scratch);
  const float s = amax == 0.0f ? 1.0f : __fdiv_rn(amax, 448.0f);
  if (threadIdx.x == 0) *scale = s;
#pragma unroll
  for (int j = 0; j < kChunks; ++j) {
    const i64 c = threadIdx.x + i64{j} * blockDim.x;
    if (c >= chunks) continue;
    float v[8];
    unpack8(held[j], e, v);
    std::uint32_t w[2] = {0, 0};
#pragma unroll
    for (int i = 0; i < 8; ++i)
      w[i / 4] |= std::uint32_t{__nv_cvt_float_to_fp8(__fdiv_rn(v[i], s), __NV_SATFINITE, __NV_E4M3)} << (8 * (i % 4));
    qr[c] = make_uint2(w[0], w[1]);
  }
  for (i64 c = chunks + threadIdx.x; c < padded_chunks; c += blockDim.x) qr[c] = make_uint2(0, 0);
}

// A padding row: zeros.
__device__ __forceinline__ void zero_e4m3_row(i64 padded_chunks, uint2* qr) {
  for (i64 c = threadIdx.x; c < padded_chunks; c += blockDim.x) qr[c] = make_uint2(0, 0);
}

}  // namespace dattn::ops::cuda
