#pragma once
// SPARSE_BLOCK mask steps 2-4 on CUDA, the general path: the score kernel (32x32 tiles of block dots per
// head) and the select kernel (a CTA per row: sort, density and/or cdf count, mask order and ascending
// list). Rows of at most 128 key blocks with density only take warp_score_select.cu instead. Included
// by block_mask_cuda.cu only.
#include <cuda_runtime.h>

#include <cstdint>

#include "attention/backends/sparse_block/cuda/block_mask_cuda.h"
#include "attention/backends/sparse_block/cuda/mask_sort_key.cuh"
#include "core/cuda/dependent_launch.cuh"

namespace dattn::sparse {
namespace {

// --------------------------------------------------------------------------------------- score

constexpr int kTile = 32;           // query blocks, key blocks and channels per step of a score CTA
constexpr int kScoreThreads = 256;  // 16 x 16, each 2 x 2 scores

struct ScoreArgs {
  const float* q_mean;
  const float* k_mean;
  float* scores;  // [B * Hq * query_blocks][key_blocks]
  int heads_q, heads_kv, head_dim, query_blocks, key_blocks;
  float scale;
};

// grid: (B * Hq, query block tiles, key block tiles).
__global__ void __launch_bounds__(kScoreThreads) score_kernel(ScoreArgs a) {
  __shared__ float qs[kTile][kTile + 1], ks[kTile][kTile + 1];  // +1: conflict-free column reads
  const int bh = blockIdx.x, b = bh / a.heads_q, h = bh % a.heads_q, hk = h / (a.heads_q / a.heads_kv);
  const int qb0 = blockIdx.y * kTile, kb0 = blockIdx.z * kTile;
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const std::int64_t cols_q = std::int64_t(a.heads_q) * a.head_dim, cols_k = std::int64_t(a.heads_kv) * a.head_dim;
  const float* qm = a.q_mean + std::int64_t(b) * a.query_blocks * cols_q + std::int64_t(h) * a.head_dim;
  const float* km = a.k_mean + std::int64_t(b) * a.key_blocks * cols_k + std::int64_t(hk) * a.head_dim;
  const int lr = threadIdx.x / kTile, lc = threadIdx.x % kTile;  // loads rows lr + 8i of channel d0 + lc
  const float* q_src = qm + (qb0 + lr) * cols_q + lc;
  const float* k_src = km + (kb0 + lr) * cols_k + lc;
  float acc[2][2] = {{0.0f, 0.0f}, {0.0f, 0.0f}};
  constexpr int kLoads = kTile / (kScoreThreads / kTile);  // rows each thread loads per channel step
  float qn[kLoads], kn[kLoads];                             // the next step's loads, in flight during this one
  const auto load = [&](int d0) {
    const int dn = min(kTile, a.head_dim - d0);
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const int r = lr + i * (kScoreThreads / kTile);
      qn[i] = lc < dn && qb0 + r < a.query_blocks ? q_src[(r - lr) * cols_q + d0] : 0.0f;
      kn[i] = lc < dn && kb0 + r < a.key_blocks ? k_src[(r - lr) * cols_k + d0] : 0.0f;
    }
  };
  load(0);
  for (int d0 = 0; d0 < a.head_dim; d0 += kTile) {
    const int dn = min(kTile, a.head_dim - d0);
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      qs[lr + i * (kScoreThreads / kTile)][lc] = qn[i];
      ks[lr + i * (kScoreThreads / kTile)][lc] = kn[i];
    }
    __syncthreads();
    if (d0 + kTile < a.head_dim) load(d0 + kTile);
#pragma unroll 4
    for (int d = 0; d < dn; ++d) {  // channels ascending, as the CPU's dot
      const float q0 = qs[ty][d], q1 = qs[ty + 16][d], k0 = ks[tx][d], k1 = ks[tx + 16][d];
      acc[0][0] = score_step(acc[0][0], q0, k0);
      acc[0][1] = score_step(acc[0][1], q0, k1);
      acc[1][0] = score_step(acc[1][0], q1, k0);
      acc[1][1] = score_step(acc[1][1], q1, k1);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int qb = qb0 + ty + 16 * i, kb = kb0 + tx + 16 * j;
      if (qb < a.query_blocks && kb < a.key_blocks)
        a.scores[(std::int64_t(bh) * a.query_blocks + qb) * a.key_blocks + kb] = __fmul_rn(a.scale, acc[i][j]);
    }
}

// -------------------------------------------------------------------------------------- select

constexpr int kMaxSelectThreads = 512;

// log(float(n)) for n = 0..128 from the host's std::log, so that the cdf logits match the CPU's.
struct LogTable {
  float v[129];
};

struct SelectArgs {
  int* blocks;             // [rows][key_blocks]: scores (float bits) in, ascending kept blocks out
  int* counts;             // [rows]
  int* order;              // [rows][key_blocks] mask order, or nullptr
  const int* valid_count;  // [B][key_blocks]
  int heads_q, query_blocks, key_blocks, padded;  // padded: a power of two >= key_blocks
  double density;          // the explicit density, else kDefaultDensity
  bool has_density, has_cdf, keep_diagonal;
  float cdf_threshold;     // static_cast<float>(threshold), as the CPU compares
  LogTable log_keys;
};

__device__ void bitonic_sort(u64* keys, int n) {  // ascending; n a power of two
  for (int size = 2; size <= n; size <<= 1)
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      for (int t = threadIdx.x; t < n / 2; t += blockDim.x) {
        const int i = 2 * t - (t & (stride - 1)), j = i + stride;
        const u64 x = keys[i], y = keys[j];
        if ((x > y) == ((i & size) == 0)) {
          keys[i] = y;
          keys[j] = x;
        }
      }
      __syncthreads();
    }
}

// The CPU's std::max(m, x): keeps m when x is NaN. Logits are never -0, so the result does not depend
// on the order of a reduction.
__device__ __forceinline__ float cpu_max(float m, float x) { return m < x ? x : m; }

__device__ float block_max(float v, float* red) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = cpu_max(v, __shfl_xor_sync(0xffffffffu, v, o));
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
  __syncthreads();
  float m = red[0];
  for (int w = 1; w < static_cast<int>(blockDim.x / 32); ++w) m = cpu_max(m, red[w]);
  return m;
}

// cdf_block_count() over keys[0, nv): each slot is first rewritten to (value bits << 32 | index), the
// value being the logit, then its exp, then its share. The total and the running mass are summed by one
// thread in mask order, as on the CPU. Returns the count to every thread.
__device__ int cdf_count(const SelectArgs& a, u64* keys, int nv, const int* valid_count, float* red, float* shared) {
  auto pack = [](float v, int j) { return (u64(__float_as_uint(v)) << 32) | u64(unsigned(j)); };
  auto value = [](u64 s) { return __uint_as_float(static_cast<unsigned>(s >> 32)); };
  float m = __int_as_float(0xff800000);
  for (int k = threadIdx.x; k < nv; k += blockDim.x) {
    const int j = key_index(keys[k]);
    const float logit = __fadd_rn(key_score(keys[k]), a.log_keys.v[valid_count[j]]);
    keys[k] = pack(logit, j);
    m = cpu_max(m, logit);
  }
  const float max_logit = block_max(m, red);  // ends with a barrier: the slots are written
  for (int k = threadIdx.x; k < nv; k += blockDim.x) {
    // The CPU's std::exp(float) is glibc's expf (0.502 ulp); exp in double rounded once to float is
    // the correctly rounded value, so the two differ (by one ulp) only where glibc misrounds: 1 in
    // ~11,600 floats of [-104, 0] on an x86-64 host (CUDA's expf, 2 ulp, would differ far more often).
    // A count can then differ only when the running mass lands within rounding of the threshold.
    const float w = static_cast<float>(exp(static_cast<double>(__fsub_rn(value(keys[k]), max_logit))));
    keys[k] = pack(w, static_cast<int>(keys[k] & 0xffffffffu));
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.0f;
    for (int k = 0; k < nv; ++k) total = __fadd_rn(total, value(keys[k]));
    shared[0] = total;
  }
  __syncthreads();
  const float total = shared[0];
  for (int k = threadIdx.x; k < nv; k += blockDim.x)
    keys[k] = pack(__fdiv_rn(value(keys[k]), total), static_cast<int>(keys[k] & 0xffffffffu));
  __syncthreads();
  if (threadIdx.x == 0) {
    int count = nv;
    float mass = 0.0f;
    for (int k = 0; k < nv; ++k) {
      mass = __fadd_rn(mass, value(keys[k]));
      if (mass >= a.cdf_threshold) {
        count = k + 1;
        break;
      }
    }
    shared[1] = __int_as_float(count);
  }
  __syncthreads();
  return __float_as_int(shared[1]);
}

// One CTA per row r = (b * Hq + h) * query_blocks + qb; blockDim.x a power of two in [32, 512] with
// 32 * blockDim.x >= key_blocks (one word of the kept bitmap per thread).
__global__ void __launch_bounds__(kMaxSelectThreads) select_kernel(SelectArgs a) {
  extern __shared__ u64 keys[];  // [padded]
  __shared__ unsigned kept[kMaxCudaKeyBlocks / 32];
  __shared__ float red[kMaxSelectThreads / 32], shared[2];
  __shared__ int warp_sum[kMaxSelectThreads / 32], n_valid;
  const int r = blockIdx.x, qb = r % a.query_blocks, b = r / (a.heads_q * a.query_blocks);
  const int nkb = a.key_blocks, tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  int* row = a.blocks + std::int64_t(r) * nkb;
  const int* valid_count = a.valid_count + std::int64_t(b) * nkb;
  const int words = (nkb + 31) / 32;
  if (tid == 0) n_valid = 0;
  if (tid < words) kept[tid] = 0;
  __syncthreads();
  cuda::allow_dependents();  // the attention kernel may be scheduled; it waits for this grid
  int mine = 0;
  for (int j = tid; j < a.padded; j += blockDim.x) {
    u64 key = kExcluded;
    if (j < nkb && valid_count[j] > 0) {
      key = sort_key(__int_as_float(row[j]), j, a.keep_diagonal && j == qb);
      ++mine;
    }
    keys[j] = key;
  }
  if (mine) atomicAdd(&n_valid, mine);
  __syncthreads();
  bitonic_sort(keys, a.padded);  // the scores in `row` are all read: it can be overwritten below
  const int nv = n_valid;
  int keep = density_count(a.density, nv);
  if (a.has_cdf) {
    const int by_mass = cdf_count(a, keys, nv, valid_count, red, shared);  // slots now hold the index
    keep = a.has_density ? min(keep, by_mass) : by_mass;
  }
  for (int k = tid; k < keep; k += blockDim.x) {
    const int j = a.has_cdf ? static_cast<int>(keys[k] & 0xffffffffu) : key_index(keys[k]);
    if (a.order) a.order[std::int64_t(r) * nkb + k] = j;
    atomicOr(&kept[j / 32], 1u << (j % 32));
  }
  __syncthreads();
  // The ascending list: an exclusive scan of the bitmap words' popcounts, then each word's bits.
  unsigned bits = tid < words ? kept[tid] : 0u;
  const int c = __popc(bits);
  const int inclusive = warp_inclusive_sum(c, lane);
  if (lane == 31) warp_sum[warp] = inclusive;
  __syncthreads();
  int pos = inclusive - c;
  for (int w = 0; w < warp; ++w) pos += warp_sum[w];
  for (; bits; bits &= bits - 1) row[pos++] = tid * 32 + __ffs(static_cast<int>(bits)) - 1;
  if (tid == 0) a.counts[r] = keep;
}

}  // namespace
}  // namespace dattn::sparse
