#pragma once
// SPARSE_BLOCK mask step 1 on CUDA: the pool kernel (block means of Q and of K's valid keys, and each key
// block's valid key count) and its launch. Included by block_mask_cuda.cu only.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "attention/backends/sparse_block/block_mask.h"
#include "core/cuda/check.cuh"

namespace dattn::sparse {
namespace {

constexpr int kGroupRows = static_cast<int>(kPoolGroupRows);  // rows per group (block_mask.h)
constexpr int kMaxPoolWarps = 128 / kGroupRows;              // one warp per group of a 128-row block
constexpr int kParamLengths = 256;  // key lengths of batches up to this size travel as a kernel parameter

struct PoolArgs {
  const void* q;
  const void* k;
  float* q_mean;                  // [B][query_blocks][Hq * D]
  float* k_mean;                  // [B][key_blocks][Hkv * D], 0 for a block without valid keys
  int* valid_count;               // [B][key_blocks]
  int lengths_from;               // 0: no key lengths; 1: length_param; 2: lengths (device memory)
  const int* lengths;             // [B] valid key prefix per batch item
  const std::uint8_t* key_mask;   // [B][Sk], or nullptr (unused with lengths, as in key_valid())
  int seq_q, seq_k, cols_q, cols_k, block_size, query_blocks, key_blocks, ctas_q, ctas_k;
  int length_param[kParamLengths];  // [B] when B <= kParamLengths: no host-to-device copy
};

template <int VEC>
struct alignas(2 * VEC) Pack {
  unsigned short bits[VEC];
};

template <bool kBf16>
__device__ __forceinline__ float to_float(unsigned short bits) {
  if constexpr (kBf16)
    return __uint_as_float(static_cast<unsigned>(bits) << 16);
  else
    return __half2float(__ushort_as_half(bits));
}

// grid.x: query blocks x ctas_q, then key blocks x ctas_k (a CTA per block and chunk of 32 * VEC
// columns); grid.y: batch. Warp w sums the block's groups w, w + kWarps, ... (kGroupRows rows each, in
// row order, kInFlight loads outstanding per lane), then the group sums are added in group order
// (pool_rows in block_mask.cc).
template <bool kBf16, int VEC, int kWarps, int kInFlight>
__global__ void __launch_bounds__(kWarps * 32) pool_kernel(PoolArgs a) {
  static_assert(kGroupRows % kInFlight == 0);
  __shared__ float part[kMaxPoolWarps][32 * VEC];
  __shared__ int group_count[kMaxPoolWarps];
  const int b = blockIdx.y;
  int cta = blockIdx.x;
  const bool keys = cta >= a.query_blocks * a.ctas_q;
  if (keys) cta -= a.query_blocks * a.ctas_q;
  const int ctas = keys ? a.ctas_k : a.ctas_q, cols = keys ? a.cols_k : a.cols_q;
  const int blk = cta / ctas, chunk0 = (cta % ctas) * 32 * VEC;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int col = chunk0 + lane * VEC;  // lane 0 is always inside: a chunk starts before `cols`
  const int seq = keys ? a.seq_k : a.seq_q;
  const int block_begin = blk * a.block_size, block_end = min(seq, block_begin + a.block_size);
  const int groups = (block_end - block_begin + kGroupRows - 1) / kGroupRows;  // the CPU's groups
  int end = block_end;  // rows at or past `end` are invalid keys
  if (keys && a.lengths_from) end = min(end, a.lengths_from == 1 ? a.length_param[b] : a.lengths[b]);
  const std::int64_t item = static_cast<std::int64_t>(b) * seq;  // the batch item's first token
  const std::uint8_t* mask = keys && !a.lengths_from && a.key_mask ? a.key_mask + item : nullptr;
  const auto* x = static_cast<const unsigned short*>(keys ? a.k : a.q) + item * cols + col;

  for (int g = warp; g < groups; g += kWarps) {
    float acc[VEC];
#pragma unroll
    for (int e = 0; e < VEC; ++e) acc[e] = 0.0f;
    int n = 0;
    for (int i = block_begin + g * kGroupRows; i < block_begin + (g + 1) * kGroupRows; i += kInFlight) {
      Pack<VEC> v[kInFlight];
      bool ok[kInFlight];
#pragma unroll
      for (int u = 0; u < kInFlight; ++u) {  // all loads first, then the adds in row order
        const int j = i + u;
        ok[u] = j < end && (mask == nullptr || mask[j] != 0);
        if (ok[u] && col < cols) v[u] = *reinterpret_cast<const Pack<VEC>*>(x + static_cast<std::int64_t>(j) * cols);
      }
#pragma unroll
      for (int u = 0; u < kInFlight; ++u) {
        if (!ok[u]) continue;
        ++n;
#pragma unroll
        for (int e = 0; e < VEC; ++e) acc[e] = __fadd_rn(acc[e], to_float<kBf16>(v[u].bits[e]));
      }
    }
#pragma unroll
    for (int e = 0; e < VEC; ++e) part[g][lane * VEC + e] = acc[e];
    if (lane == 0) group_count[g] = n;
  }
  __syncthreads();

  int total_n = 0;
  for (int g = 0; g < groups; ++g) total_n += group_count[g];
  const int blocks = keys ? a.key_blocks : a.query_blocks;
  float* out = (keys ? a.k_mean : a.q_mean) + (static_cast<std::int64_t>(b) * blocks + blk) * cols;
  for (int c = static_cast<int>(threadIdx.x); c < 32 * VEC && chunk0 + c < cols; c += kWarps * 32) {
    float sum = 0.0f;
    for (int g = 0; g < groups; ++g) sum = __fadd_rn(sum, part[g][c]);
    out[chunk0 + c] = total_n > 0 ? __fdiv_rn(sum, static_cast<float>(total_n)) : 0.0f;
  }
  if (keys && chunk0 == 0 && threadIdx.x == 0) a.valid_count[b * a.key_blocks + blk] = total_n;
}

// One warp per group of a 128-row block (4 groups of a 64-row block: half the warps idle), 8 rows in
// flight per lane. Measured on an H200 (SPARSE_MASK, ms, wan22 / flux / wan21_14b): 0.070 / 0.042 /
// 1.88 against 0.073 / 0.050 / 1.93 for one thread streaming a whole block; 16 rows in flight (128
// registers, 2 CTAs per SM) was slower, 0.105 / 0.052.

template <bool kBf16>
void launch_pool(const PoolArgs& args, int batch, bool vec8, cudaStream_t stream) {
  const int chunk = 32 * (vec8 ? 8 : 1);
  PoolArgs a = args;
  a.ctas_q = (a.cols_q + chunk - 1) / chunk;
  a.ctas_k = (a.cols_k + chunk - 1) / chunk;
  const dim3 grid(a.query_blocks * a.ctas_q + a.key_blocks * a.ctas_k, batch);
  constexpr int kWarps = kMaxPoolWarps, kInFlight = 8;
  if (vec8)
    pool_kernel<kBf16, 8, kWarps, kInFlight><<<grid, kWarps * 32, 0, stream>>>(a);
  else
    pool_kernel<kBf16, 1, kWarps, kInFlight><<<grid, kWarps * 32, 0, stream>>>(a);
  DATTN_CUDA_CHECK(cudaGetLastError());
}

}  // namespace
}  // namespace dattn::sparse
