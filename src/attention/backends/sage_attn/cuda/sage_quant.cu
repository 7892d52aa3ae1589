// SAGE_ATTN's quantization pass on CUDA. Five small kernels, each reading its input once with 16-byte
// loads (8 channels per thread): K/V channel statistics per key chunk, their per-head finalisation
// (mean of K, scale of V), K smoothed and quantized per 64-key block, Q scaled and quantized per
// 16-row block, V quantized to e4m3 and transposed. All arithmetic follows the CPU scheme
// (sage_quant.cc) operation by operation, with explicit round-to-nearest intrinsics so nvcc cannot
// contract them into FMAs; only the order of the K mean's sum differs (chunked, not in key order).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "attention/backends/sage_attn/cuda/sage_quant_cuda.h"
#include "attention/backends/sage_attn/sage_quant.h"
#include "core/cuda/check.cuh"
#include "core/cuda/stream.cuh"

namespace dattn::sage::cuda_impl {
namespace {

constexpr int kThreads = 256;
constexpr int kStatChunk = 256;  // keys per block of the statistics kernel

template <typename T>
__device__ __forceinline__ void load8(const T* src, float* f) {
  const uint4 u = *reinterpret_cast<const uint4*>(src);
  const T* h = reinterpret_cast<const T*>(&u);
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    if constexpr (std::is_same_v<T, __half>)
      f[e] = __half2float(h[e]);
    else
      f[e] = __bfloat162float(h[e]);
  }
}

// NaN and Inf are taken out as 0 before any statistic or quantization (docs/backend-semantics.md,
// SAGE_ATTN, "Non-finite inputs"); returns whether any of the 8 was. Finite inputs pass unchanged.
__device__ __forceinline__ bool take_out_nonfinite(float* f) {
  bool bad = false;
#pragma unroll
  for (int e = 0; e < 8; ++e)
    if (!isfinite(f[e])) bad = true, f[e] = 0.f;
  return bad;
}

__device__ __forceinline__ bool key_valid(const SageBuffers& s, int b, int j) {
  if (j >= s.kv_len[b]) return false;
  return s.key_mask == nullptr || s.key_mask[static_cast<std::int64_t>(b) * s.seq_k + j] != 0;
}

__device__ __forceinline__ std::int8_t quant_int8(float x, float inv) {
  const int r = __float2int_rn(__fmul_rn(x, inv));
  return static_cast<std::int8_t>(max(-127, min(127, r)));
}

// Block-wide max of a non-negative value over kThreads threads; every thread gets the result.
__device__ __forceinline__ float block_max(float v, float* red) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();  // `red` may still be read by a previous call
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
  __syncthreads();
  float m = red[0];
#pragma unroll
  for (int w = 1; w < kThreads / 32; ++w) m = fmaxf(m, red[w]);
  return m;
}

struct Scratch {
  float* k_partial;     // [B * Hkv][chunks][D]
  int* count_partial;   // [B * Hkv][chunks]
  float* k_mean;        // [B * Hkv][D]
  unsigned* v_amax;     // [B * Hkv][D], float bits (non-negative floats order like their bits)
};

int stat_chunks(const SageBuffers& s) { return (s.seq_k + kStatChunk - 1) / kStatChunk; }

// Step 1 and 5, statistics: per (b, kv head, chunk of keys) the channel sums of valid K and the valid
// key count; the channel amax of valid V is folded into v_amax with atomicMax (exact for a max).
template <typename T, int D>
__global__ void __launch_bounds__(kThreads) kv_stats_kernel(const T* k, const T* v, SageBuffers s, Scratch w) {
  constexpr int kLanes = D / 8, kRows = kThreads / kLanes;
  __shared__ float sums[kRows][D];
  __shared__ float amax[kRows][D];
  __shared__ int counts[kRows];
  const int chunk = blockIdx.x, bh = blockIdx.y, b = bh / s.heads_kv, hk = bh % s.heads_kv;
  const int c8 = threadIdx.x % kLanes, r = threadIdx.x / kLanes;
  float sum[8] = {}, mx[8] = {};
  int count = 0;
  bool key_bad = false, value_bad[8] = {};
  const int j_end = min(s.seq_k, (chunk + 1) * kStatChunk);
  for (int j = chunk * kStatChunk + r; j < j_end; j += kRows) {
    if (!key_valid(s, b, j)) continue;
    const std::int64_t off = ((static_cast<std::int64_t>(b) * s.seq_k + j) * s.heads_kv + hk) * D + c8 * 8;
    float kf[8], vf[8];
    load8(k + off, kf);
    load8(v + off, vf);
    key_bad |= take_out_nonfinite(kf);
#pragma unroll
    for (int e = 0; e < 8; ++e)
      if (!isfinite(vf[e])) value_bad[e] = true, vf[e] = 0.f;
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      sum[e] = __fadd_rn(sum[e], kf[e]);
      mx[e] = fmaxf(mx[e], fabsf(vf[e]));
    }
    ++count;
  }
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    sums[r][c8 * 8 + e] = sum[e];
    amax[r][c8 * 8 + e] = mx[e];
  }
  if (c8 == 0) counts[r] = count;
  // Rare: plain stores of 1 (any writer wins) and one atomic per flag word.
  bool any_value_bad = false;
#pragma unroll
  for (int e = 0; e < 8; ++e)
    if (value_bad[e]) any_value_bad = true, s.v_bad[static_cast<std::int64_t>(bh) * D + c8 * 8 + e] = 1;
  if (key_bad || any_value_bad) {
    atomicOr(s.kv_flags + bh, (key_bad ? kKeyBad : 0u) | (any_value_bad ? kValueBad : 0u));
    atomicOr(s.any_bad, 1u);
  }
  __syncthreads();
  const int n_chunks = gridDim.x;
  for (int d = threadIdx.x; d < D; d += kThreads) {
    float t = 0.f, m = 0.f;
    for (int i = 0; i < kRows; ++i) {
      t = __fadd_rn(t, sums[i][d]);
      m = fmaxf(m, amax[i][d]);
    }
    w.k_partial[(static_cast<std::int64_t>(bh) * n_chunks + chunk) * D + d] = t;
    atomicMax(w.v_amax + static_cast<std::int64_t>(bh) * D + d, __float_as_uint(m));
  }
  if (threadIdx.x == 0) {
    int c = 0;
    for (int i = 0; i < kRows; ++i) c += counts[i];
    w.count_partial[static_cast<std::int64_t>(bh) * n_chunks + chunk] = c;
  }
}

// Per (b, kv head): K's channel mean over the valid keys (0 when none) and V's channel scale.
__global__ void kv_finalize_kernel(SageBuffers s, Scratch w, int n_chunks) {
  const int bh = blockIdx.x, D = s.head_dim;
  int count = 0;
  for (int c = 0; c < n_chunks; ++c) count += w.count_partial[static_cast<std::int64_t>(bh) * n_chunks + c];
  if (threadIdx.x == 0 && count == 0) atomicOr(s.kv_flags + bh, kNoValidKey);  // its rows stay zero
  for (int d = threadIdx.x; d < D; d += blockDim.x) {
    float t = 0.f;
    for (int c = 0; c < n_chunks; ++c) t = __fadd_rn(t, w.k_partial[(static_cast<std::int64_t>(bh) * n_chunks + c) * D + d]);
    w.k_mean[static_cast<std::int64_t>(bh) * D + d] = count > 0 ? __fdiv_rn(t, static_cast<float>(count)) : 0.f;
    float sv = __fdiv_rn(__uint_as_float(w.v_amax[static_cast<std::int64_t>(bh) * D + d]), kE4m3Max);
    s.v_scale[static_cast<std::int64_t>(bh) * D + d] = sv == 0.f ? 1.f : sv;
  }
}

// Steps 1 and 3 for K: one block of 64 keys (kKBlock) per CTA; padded and invalid keys quantize to 0.
template <typename T, int D>
__global__ void __launch_bounds__(kThreads) quant_k_kernel(const T* k, SageBuffers s, Scratch w) {
  constexpr int kLanes = D / 8, kRows = kThreads / kLanes, kPasses = kKBlock / kRows;
  __shared__ float red[kThreads / 32];
  const int blk = blockIdx.x, bh = blockIdx.y, b = bh / s.heads_kv, hk = bh % s.heads_kv;
  const int c8 = threadIdx.x % kLanes, r = threadIdx.x / kLanes;
  float mean[8], x[kPasses][8];
#pragma unroll
  for (int e = 0; e < 8; ++e) mean[e] = w.k_mean[static_cast<std::int64_t>(bh) * D + c8 * 8 + e];
  float mx = 0.f;
#pragma unroll
  for (int pass = 0; pass < kPasses; ++pass) {
    const int j = blk * static_cast<int>(kKBlock) + pass * kRows + r;
    if (j < s.seq_k && key_valid(s, b, j)) {
      load8(k + ((static_cast<std::int64_t>(b) * s.seq_k + j) * s.heads_kv + hk) * D + c8 * 8, x[pass]);
      take_out_nonfinite(x[pass]);  // flagged by kv_stats_kernel
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        x[pass][e] = __fsub_rn(x[pass][e], mean[e]);
        mx = fmaxf(mx, fabsf(x[pass][e]));
      }
    } else {
#pragma unroll
      for (int e = 0; e < 8; ++e) x[pass][e] = 0.f;
    }
  }
  const float amax = block_max(mx, red);
  const float inv = __fdiv_rn(kInt8Max, amax);
  const bool zero = amax == 0.f || !isfinite(inv);
#pragma unroll
  for (int pass = 0; pass < kPasses; ++pass) {
    const int j = blk * static_cast<int>(kKBlock) + pass * kRows + r;
    std::uint32_t packed[2] = {0, 0};
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const std::uint32_t q = zero ? 0u : static_cast<std::uint8_t>(quant_int8(x[pass][e], inv));
      packed[e / 4] |= q << (8 * (e % 4));
    }
    *reinterpret_cast<uint2*>(s.k8 + (static_cast<std::int64_t>(bh) * s.seq_k_pad + j) * D + c8 * 8) =
        make_uint2(packed[0], packed[1]);
  }
  if (threadIdx.x == 0)
    s.k_scale[static_cast<std::int64_t>(bh) * (s.seq_k_pad / kKBlock) + blk] = zero ? 0.f : __fdiv_rn(amax, kInt8Max);
}

// Steps 2 and 3 for Q: each warp one block of 16 rows (kQBlock); a lane holds half a row. Rows past Sq
// are padding and quantize to 0.
template <typename T, int D>
__global__ void __launch_bounds__(128) quant_q_kernel(const T* q, SageBuffers s, float fold) {
  constexpr int kHalf = D / 2;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int bh = blockIdx.y, b = bh / s.heads_q, h = bh % s.heads_q;
  const int blk = blockIdx.x * 4 + warp, i = blk * static_cast<int>(kQBlock) + lane / 2, c0 = (lane % 2) * kHalf;
  float x[kHalf];
  float mx = 0.f;
  bool bad = false;
  if (i < s.seq_q) {
    const T* row = q + ((static_cast<std::int64_t>(b) * s.seq_q + i) * s.heads_q + h) * D + c0;
#pragma unroll
    for (int c = 0; c < kHalf; c += 8) {
      load8(row + c, x + c);
      bad |= take_out_nonfinite(x + c);
    }
#pragma unroll
    for (int c = 0; c < kHalf; ++c) {
      x[c] = __fmul_rn(x[c], fold);
      mx = fmaxf(mx, fabsf(x[c]));
    }
  } else {
#pragma unroll
    for (int c = 0; c < kHalf; ++c) x[c] = 0.f;
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  // The two lanes of a row agree on its flag; every row (padding too) gets one written.
  bad = __shfl_xor_sync(0xffffffffu, static_cast<int>(bad), 1) != 0 || bad;
  if (lane % 2 == 0) {
    s.q_bad[static_cast<std::int64_t>(bh) * s.seq_q_pad + i] = bad ? 1 : 0;
    if (bad) atomicOr(s.any_bad, 1u);
  }
  const float inv = __fdiv_rn(kInt8Max, mx);
  const bool zero = mx == 0.f || !isfinite(inv);
  std::int8_t* dst = s.q8 + (static_cast<std::int64_t>(bh) * s.seq_q_pad + i) * D + c0;
#pragma unroll
  for (int c = 0; c < kHalf; c += 16) {
    std::uint32_t packed[4] = {0, 0, 0, 0};
#pragma unroll
    for (int e = 0; e < 16; ++e) {
      const std::uint32_t v = zero ? 0u : static_cast<std::uint8_t>(quant_int8(x[c + e], inv));
      packed[e / 4] |= v << (8 * (e % 4));
    }
    *reinterpret_cast<uint4*>(dst + c) = make_uint4(packed[0], packed[1], packed[2], packed[3]);
  }
  if (lane == 0) s.q_scale[static_cast<std::int64_t>(bh) * (s.seq_q_pad / kQBlock) + blk] = zero ? 0.f : __fdiv_rn(mx, kInt8Max);
}

// Step 5: one tile of 128 keys per CTA, transposed through shared memory to V^T rows of 128 bytes,
// keys permuted within groups of 16 (v_key_position). Invalid and padded keys are 0.
// A warp writes one byte per thread into 16 (D = 128) or 8 (D = 64) channel rows of the tile at once.
// Rows of 128 bytes all start in bank 0, so the column is XOR-swizzled by 8 * (channel / 8): each of
// those rows lands in its own 4-byte bank (unswizzled, the stores were 16-way bank conflicts and this
// kernel took half of the whole quantization pass). The read-out undoes the swizzle per 16-byte chunk.
template <typename T, int D>
__global__ void __launch_bounds__(kThreads) quant_v_kernel(const T* v, SageBuffers s) {
  constexpr int kLanes = D / 8, kIters = kTileRows * kLanes / kThreads;
  static_assert(kThreads % kLanes == 0, "a thread keeps its 8 channels across iterations");
  __shared__ alignas(16) std::uint8_t tile[D][kTileRows];
  const int t0 = blockIdx.x * kTileRows, bh = blockIdx.y, b = bh / s.heads_kv, hk = bh % s.heads_kv;
  const int c8 = threadIdx.x % kLanes, swz = 8 * c8;
  float sv[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) sv[e] = s.v_scale[static_cast<std::int64_t>(bh) * D + c8 * 8 + e];
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int p = (it * kThreads + static_cast<int>(threadIdx.x)) / kLanes, j = t0 + p;
    const int pos = (p / 16) * 16 + v_key_position(p % 16);
    float x[8];
    const bool valid = j < s.seq_k && key_valid(s, b, j);
    if (valid) {
      load8(v + ((static_cast<std::int64_t>(b) * s.seq_k + j) * s.heads_kv + hk) * D + c8 * 8, x);
      take_out_nonfinite(x);  // flagged by kv_stats_kernel
    }
#pragma unroll
    for (int e = 0; e < 8; ++e)
      tile[c8 * 8 + e][pos ^ swz] =
          valid ? static_cast<std::uint8_t>(__nv_cvt_float_to_fp8(__fdiv_rn(x[e], sv[e]), __NV_SATFINITE, __NV_E4M3))
                : 0;
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < D * (kTileRows / 16); idx += kThreads) {
    const int d = idx / (kTileRows / 16), c = idx % (kTileRows / 16), row_swz = 8 * (d / 8);
    // Logical bytes [16c, 16c + 16) sit in physical chunk c ^ (row_swz / 16), halves swapped when bit 3
    // of the swizzle is set.
    uint4 u = *reinterpret_cast<const uint4*>(&tile[d][(c * 16) ^ (row_swz & ~15)]);
    if (row_swz & 8) u = make_uint4(u.z, u.w, u.x, u.y);
    *reinterpret_cast<uint4*>(s.v8t + (static_cast<std::int64_t>(bh) * D + d) * s.seq_k_pad + t0 + c * 16) = u;
  }
}

Scratch carve(const SageBuffers& s, void* scratch) {
  const std::int64_t bh = std::int64_t(s.batch) * s.heads_kv, chunks = stat_chunks(s);
  auto* base = static_cast<unsigned char*>(scratch);
  Scratch w;
  w.k_partial = reinterpret_cast<float*>(base);
  base += bh * chunks * s.head_dim * sizeof(float);
  w.count_partial = reinterpret_cast<int*>(base);
  base += ((bh * chunks * sizeof(int) + 255) / 256) * 256;
  w.k_mean = reinterpret_cast<float*>(base);
  base += bh * s.head_dim * sizeof(float);
  w.v_amax = reinterpret_cast<unsigned*>(base);
  return w;
}

template <typename T, int D>
void run(const AttentionProblem& problem, const SageBuffers& s, void* scratch) {
  const auto stream = dattn::cuda::stream_or_current(problem.stream);
  const Scratch w = carve(s, scratch);
  const unsigned bh_kv = static_cast<unsigned>(s.batch * s.heads_kv), bh_q = static_cast<unsigned>(s.batch * s.heads_q);
  const T* q = static_cast<const T*>(problem.q);
  const T* k = static_cast<const T*>(problem.k);
  const T* v = static_cast<const T*>(problem.v);
  const int chunks = stat_chunks(s);
  DATTN_CUDA_CHECK(cudaMemsetAsync(w.v_amax, 0, std::size_t(bh_kv) * D * sizeof(unsigned), stream));
  if (chunks > 0) kv_stats_kernel<T, D><<<dim3(chunks, bh_kv), kThreads, 0, stream>>>(k, v, s, w);
  kv_finalize_kernel<<<bh_kv, 128, 0, stream>>>(s, w, chunks);
  quant_k_kernel<T, D><<<dim3(s.seq_k_pad / kKBlock, bh_kv), kThreads, 0, stream>>>(k, s, w);
  quant_v_kernel<T, D><<<dim3(s.seq_k_pad / kTileRows, bh_kv), kThreads, 0, stream>>>(v, s);
  const float fold = q_fold_factor(problem.softmax_scale());
  quant_q_kernel<T, D><<<dim3(s.seq_q_pad / 64, bh_q), 128, 0, stream>>>(q, s, fold);
  DATTN_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

std::size_t quantize_scratch_bytes(const SageBuffers& s) {
  const std::size_t bh = std::size_t(s.batch) * s.heads_kv, chunks = stat_chunks(s);
  return bh * chunks * s.head_dim * sizeof(float) + ((bh * chunks * sizeof(int) + 255) / 256) * 256 +
         2 * bh * s.head_dim * sizeof(float);
}

void sage_quantize_cuda(const AttentionProblem& problem, const SageBuffers& s, void* scratch) {
  const bool fp16 = problem.shape.dtype == DType::F16;
  if (s.head_dim == 128)
    fp16 ? run<__half, 128>(problem, s, scratch) : run<__nv_bfloat16, 128>(problem, s, scratch);
  else if (s.head_dim == 64)
    fp16 ? run<__half, 64>(problem, s, scratch) : run<__nv_bfloat16, 64>(problem, s, scratch);
  else
    throw std::logic_error("SAGE_ATTN (cuda): head_dim " + std::to_string(s.head_dim) + " has no quantization kernel");
}

}  // namespace dattn::sage::cuda_impl
