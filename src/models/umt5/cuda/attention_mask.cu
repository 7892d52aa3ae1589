// umT5's additive attention mask on the GPU: a gather from the layer's bias table through the bucket
// table (computed once per encode on the host, uploaded once), plus the key padding. Memory-bound:
// [1, 64, 512, 512] float32 (64 MiB) per layer, about 15 us on an H200; the host build plus upload it
// replaces took tens of milliseconds per layer.
#include "models/umt5/cuda/attention_mask.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <limits>

#include "core/cuda/check.cuh"
#include "core/cuda/stream.cuh"

namespace dattn::umt5::cuda {
namespace {

// One thread per 4 consecutive keys of one (b, h, i) row when seq % 4 == 0 (a float4 store), else
// one per key. Grid-stride, so any size launches.
__global__ void mask_kernel(float* __restrict__ out, const float* __restrict__ table,
                            const std::int32_t* __restrict__ buckets, const std::uint8_t* __restrict__ key_valid,
                            std::int64_t heads, std::int64_t seq, std::int64_t total) {
  constexpr float kHidden = std::numeric_limits<float>::lowest();
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += stride) {
    const std::int64_t j = e % seq;
    const std::int64_t row = e / seq;  // (b * heads + h) * seq + i
    const std::int64_t i = row % seq;
    const std::int64_t bh = row / seq;
    const std::int64_t h = bh % heads, b = bh / heads;
    const float bias = table[static_cast<std::int64_t>(buckets[i * seq + j]) * heads + h];
    // bias + lowest rounds to lowest, as in transformers' position_bias + attention_mask (and the CPU).
    out[e] = key_valid[b * seq + j] != 0 ? bias : bias + kHidden;
  }
}

__global__ void mask_kernel4(float4* __restrict__ out, const float* __restrict__ table,
                             const std::int32_t* __restrict__ buckets, const std::uint8_t* __restrict__ key_valid,
                             std::int64_t heads, std::int64_t seq, std::int64_t total4) {
  constexpr float kHidden = std::numeric_limits<float>::lowest();
  const std::int64_t quads = seq / 4;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total4; e += stride) {
    const std::int64_t j0 = (e % quads) * 4;
    const std::int64_t row = e / quads;
    const std::int64_t i = row % seq;
    const std::int64_t bh = row / seq;
    const std::int64_t h = bh % heads, b = bh / heads;
    float v[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const std::int64_t j = j0 + k;
      const float bias = table[static_cast<std::int64_t>(buckets[i * seq + j]) * heads + h];
      v[k] = key_valid[b * seq + j] != 0 ? bias : bias + kHidden;
    }
    out[e] = make_float4(v[0], v[1], v[2], v[3]);
  }
}

}  // namespace

void build_attention_mask(float* out, const float* table, const std::int32_t* buckets,
                          const std::uint8_t* key_valid, std::int64_t batch, std::int64_t heads, std::int64_t seq) {
  const std::int64_t total = batch * heads * seq * seq;
  if (total == 0) return;
  constexpr int kThreads = 256;
  const cudaStream_t stream = dattn::cuda::current_stream();
  const bool vec = seq % 4 == 0 && reinterpret_cast<std::uintptr_t>(out) % 16 == 0;
  const std::int64_t work = vec ? total / 4 : total;
  // Enough blocks to fill the GPU several times over; the grid-stride loop covers the rest.
  const std::int64_t want = (work + kThreads - 1) / kThreads;
  const unsigned blocks = static_cast<unsigned>(want < 65536 ? want : 65536);
  if (vec)
    mask_kernel4<<<blocks, kThreads, 0, stream>>>(reinterpret_cast<float4*>(out), table, buckets, key_valid, heads, seq, work);
  else
    mask_kernel<<<blocks, kThreads, 0, stream>>>(out, table, buckets, key_valid, heads, seq, work);
  DATTN_CUDA_CHECK(cudaGetLastError());
}

}  // namespace dattn::umt5::cuda
