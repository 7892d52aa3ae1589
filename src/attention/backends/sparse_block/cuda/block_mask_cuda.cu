// SPARSE_BLOCK's block mask on CUDA, the CPU's estimate_block_mask (block_mask.cc) bit for bit:
//  pool   - a CTA per block and 256 (or 32) columns, a warp per 16-row group of the block, each lane
//           summing 8 (or 1) columns of its group's rows in row order, then the group sums in order
//           (the CPU's pool_rows): Q and K are read once, coalesced. Means of each query block and of
//           each key block's valid keys, and each key block's valid key count.
//  score  - 32x32 tiles of (query block, key block) dots per (b, h), each a sequential sum over the
//           channels, written into the mask's own blocks buffer (same size; select reads it first).
//  select - one CTA per row: bitonic sort of (diagonal, score descending, index) keys in shared
//           memory, the count (density and/or cdf), then the mask order and the ascending list.
//  Rows of at most 128 key blocks with density only take score and select in one kernel instead, a
//  warp per row (warp_score_select.cu), with the same arithmetic and keys (mask_sort_key.cuh).
// nvcc contracts a*b+c into an FMA by default and the CPU build (x86-64, no -mfma) does not: every
// operation the CPU does separately is an explicit round-to-nearest intrinsic here.
#include "attention/backends/sparse_block/cuda/block_mask_cuda.h"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "attention/backends/sparse_block/cuda/mask_sort_key.cuh"
#include "attention/backends/sparse_block/cuda/warp_score_select.h"
#include "core/cuda/check.cuh"
#include "core/cuda/dependent_launch.cuh"
#include "dattn/core/error.h"

namespace dattn::sparse {
namespace {

// ---------------------------------------------------------------------------------------- pool

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
      acc[0][0] = __fadd_rn(acc[0][0], __fmul_rn(q0, k0));
      acc[0][1] = __fadd_rn(acc[0][1], __fmul_rn(q0, k1));
      acc[1][0] = __fadd_rn(acc[1][0], __fmul_rn(q1, k0));
      acc[1][1] = __fadd_rn(acc[1][1], __fmul_rn(q1, k1));
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
  int inclusive = c;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int y = __shfl_up_sync(0xffffffffu, inclusive, o);
    if (lane >= o) inclusive += y;
  }
  if (lane == 31) warp_sum[warp] = inclusive;
  __syncthreads();
  int pos = inclusive - c;
  for (int w = 0; w < warp; ++w) pos += warp_sum[w];
  for (; bits; bits &= bits - 1) row[pos++] = tid * 32 + __ffs(static_cast<int>(bits)) - 1;
  if (tid == 0) a.counts[r] = keep;
}

// ------------------------------------------------------------------------------------------ host

std::size_t align256(std::size_t n) { return (n + 255) / 256 * 256; }

const LogTable& log_table() {
  static const LogTable table = [] {
    LogTable t{};
    t.v[0] = -INFINITY;  // never read: blocks without valid keys are excluded
    for (int n = 1; n <= 128; ++n) {
      volatile float x = static_cast<float>(n);  // a run-time logf like the CPU's, never constant-folded
      t.v[n] = std::log(static_cast<float>(x));
    }
    return t;
  }();
  return table;
}

void check_limit(bool ok, const std::string& what) {
  if (!ok) throw UserError("SPARSE_BLOCK (cuda) block mask: " + what);
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

DeviceBlockMask::~DeviceBlockMask() { release(); }

void DeviceBlockMask::release() noexcept {
  if (base_) cudaFreeAsync(base_, static_cast<cudaStream_t>(stream_));
  base_ = nullptr;
}

DeviceBlockMask::DeviceBlockMask(DeviceBlockMask&& o) noexcept { *this = std::move(o); }

DeviceBlockMask& DeviceBlockMask::operator=(DeviceBlockMask&& o) noexcept {
  if (this != &o) {
    release();
    base_ = std::exchange(o.base_, nullptr);
    stream_ = o.stream_;
    blocks_ = std::exchange(o.blocks_, nullptr);
    counts_ = std::exchange(o.counts_, nullptr);
    order_ = std::exchange(o.order_, nullptr);
    batch_ = o.batch_;
    heads_ = o.heads_;
    query_blocks_ = o.query_blocks_;
    key_blocks_ = o.key_blocks_;
    block_size_ = o.block_size_;
  }
  return *this;
}

DeviceKeyBlocks DeviceBlockMask::view() const {
  DeviceKeyBlocks v;
  v.blocks = blocks_;
  v.counts = counts_;
  v.block_size = static_cast<int>(block_size_);
  v.query_blocks = static_cast<int>(query_blocks_);
  v.key_blocks = static_cast<int>(key_blocks_);
  return v;
}

DeviceBlockMask estimate_block_mask_cuda(const AttentionProblem& p, const BlockMaskOptions& options,
                                         bool with_mask_order) {
  const AttentionShape& sh = p.shape;
  if (sh.dtype != DType::BF16 && sh.dtype != DType::F16)
    throw UserError("SPARSE_BLOCK (cuda) block mask: dtype " + std::string(dtype_name(sh.dtype)) +
                    " is not bf16 or fp16");
  check_mask_options(options);
  if (options.block_size != 64 && options.block_size != 128)
    throw UserError("SPARSE_BLOCK (cuda) block mask: block_size " + std::to_string(options.block_size) +
                    " is not 64 or 128");
  sh.validate();
  check_limit(p.key_lengths.empty() || std::int64_t(p.key_lengths.size()) == sh.batch,
              "key_lengths has " + std::to_string(p.key_lengths.size()) + " entries, expected " +
                  std::to_string(sh.batch));
  const std::int64_t B = sh.batch, bs = options.block_size, nqb = (sh.seq_q + bs - 1) / bs,
                     nkb = (sh.seq_k + bs - 1) / bs, rows = B * sh.heads_q * nqb;
  check_limit(nkb <= kMaxCudaKeyBlocks, std::to_string(nkb) + " key blocks (seq_k " + std::to_string(sh.seq_k) +
                                            ") exceed the limit of " + std::to_string(kMaxCudaKeyBlocks));
  check_limit(B <= 65535, "batch " + std::to_string(B) + " exceeds 65535");
  check_limit(rows <= INT_MAX && B * sh.heads_q <= INT_MAX && sh.seq_q <= INT_MAX && sh.seq_k <= INT_MAX &&
                  sh.heads_q * sh.head_dim <= INT_MAX && (nqb + kTile - 1) / kTile <= 65535,
              sh.describe() + " is too large");
  const auto stream = static_cast<cudaStream_t>(p.stream);

  int padded = 1;
  while (padded < nkb) padded *= 2;
  const int threads = std::clamp(padded / 2, 32, kMaxSelectThreads);
  const std::size_t dyn_smem = std::size_t(padded) * sizeof(u64);
  {  // one CTA sorts a row in shared memory: the device must offer that much
    static const std::size_t static_smem = [] {
      cudaFuncAttributes attr{};
      DATTN_CUDA_CHECK(cudaFuncGetAttributes(&attr, select_kernel));
      return attr.sharedSizeBytes;
    }();
    int device = 0, optin = 0;
    DATTN_CUDA_CHECK(cudaGetDevice(&device));
    DATTN_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    check_limit(dyn_smem + static_smem <= std::size_t(optin),
                std::to_string(nkb) + " key blocks need more shared memory than this device has");
    if (dyn_smem + static_smem > 48 * 1024)
      DATTN_CUDA_CHECK(cudaFuncSetAttribute(select_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(dyn_smem)));
  }

  DeviceBlockMask mask;
  mask.stream_ = p.stream;
  mask.batch_ = B;
  mask.heads_ = sh.heads_q;
  mask.query_blocks_ = nqb;
  mask.key_blocks_ = nkb;
  mask.block_size_ = bs;
  const std::size_t list_bytes = align256(std::size_t(rows * nkb) * sizeof(int));
  const std::size_t count_bytes = align256(std::size_t(rows) * sizeof(int));
  // Scratch (pooled means, valid key counts, key lengths) shares the mask's allocation and lifetime:
  // a free between select and the attention kernel would stand between two launches that may overlap.
  const std::int64_t cols_q = sh.heads_q * sh.head_dim, cols_k = sh.heads_kv * sh.head_dim;
  const std::size_t sizes[] = {align256(std::size_t(B * nqb * cols_q) * sizeof(float)),
                               align256(std::size_t(B * nkb * cols_k) * sizeof(float)),
                               align256(std::size_t(B * nkb) * sizeof(int)), align256(std::size_t(B) * sizeof(int))};
  const std::size_t mask_bytes = count_bytes + list_bytes * (with_mask_order ? 2 : 1);
  DATTN_CUDA_CHECK(cudaMallocAsync(&mask.base_, mask_bytes + sizes[0] + sizes[1] + sizes[2] + sizes[3], stream));
  auto* base = static_cast<unsigned char*>(mask.base_);
  mask.counts_ = reinterpret_cast<int*>(base);
  mask.blocks_ = reinterpret_cast<int*>(base + count_bytes);
  if (with_mask_order) mask.order_ = reinterpret_cast<int*>(base + count_bytes + list_bytes);
  auto* s = base + mask_bytes;
  PoolArgs pool{};
  pool.q = p.q;
  pool.k = p.k;
  pool.q_mean = reinterpret_cast<float*>(s);
  pool.k_mean = reinterpret_cast<float*>(s + sizes[0]);
  pool.valid_count = reinterpret_cast<int*>(s + sizes[0] + sizes[1]);
  pool.key_mask = p.key_mask;
  if (!p.key_lengths.empty()) {
    std::vector<int> lengths(B);
    for (std::int64_t b = 0; b < B; ++b) lengths[b] = int(std::clamp<std::int64_t>(p.key_lengths[b], 0, sh.seq_k));
    if (B <= kParamLengths) {
      pool.lengths_from = 1;
      std::copy(lengths.begin(), lengths.end(), pool.length_param);
    } else {  // a copy from pageable memory: staged before the call returns, but it may wait for the stream
      int* dst = reinterpret_cast<int*>(s + sizes[0] + sizes[1] + sizes[2]);
      DATTN_CUDA_CHECK(cudaMemcpyAsync(dst, lengths.data(), B * sizeof(int), cudaMemcpyHostToDevice, stream));
      pool.lengths_from = 2;
      pool.lengths = dst;
    }
  }
  pool.seq_q = int(sh.seq_q);
  pool.seq_k = int(sh.seq_k);
  pool.cols_q = int(cols_q);
  pool.cols_k = int(cols_k);
  pool.block_size = int(bs);
  pool.query_blocks = int(nqb);
  pool.key_blocks = int(nkb);
  const bool vec8 = cols_q % 8 == 0 && cols_k % 8 == 0 && reinterpret_cast<std::uintptr_t>(p.q) % 16 == 0 &&
                    reinterpret_cast<std::uintptr_t>(p.k) % 16 == 0;
  if (sh.dtype == DType::BF16)
    launch_pool<true>(pool, int(B), vec8, stream);
  else
    launch_pool<false>(pool, int(B), vec8, stream);

  if (warp_score_select_fits(int(nkb), int(sh.head_dim), options.cdf_threshold.has_value())) {
    const WarpScoreSelectArgs ws{pool.q_mean, pool.k_mean, pool.valid_count, mask.blocks_, mask.counts_, mask.order_,
                                 int(B), int(sh.heads_q), int(sh.heads_kv), int(sh.head_dim), int(nqb), int(nkb),
                                 p.softmax_scale(), options.density.value_or(kDefaultDensity), options.keep_diagonal};
    launch_warp_score_select(ws, stream);
    return mask;
  }
  ScoreArgs score{pool.q_mean, pool.k_mean, reinterpret_cast<float*>(mask.blocks_), int(sh.heads_q),
                  int(sh.heads_kv), int(sh.head_dim), int(nqb), int(nkb), p.softmax_scale()};
  const dim3 score_grid(unsigned(B * sh.heads_q), unsigned((nqb + kTile - 1) / kTile),
                        unsigned((nkb + kTile - 1) / kTile));
  score_kernel<<<score_grid, kScoreThreads, 0, stream>>>(score);
  DATTN_CUDA_CHECK(cudaGetLastError());

  SelectArgs sel{};
  sel.blocks = mask.blocks_;
  sel.counts = mask.counts_;
  sel.order = mask.order_;
  sel.valid_count = pool.valid_count;
  sel.heads_q = int(sh.heads_q);
  sel.query_blocks = int(nqb);
  sel.key_blocks = int(nkb);
  sel.padded = padded;
  sel.density = options.density.value_or(kDefaultDensity);
  sel.has_density = options.density.has_value();
  sel.has_cdf = options.cdf_threshold.has_value();
  sel.cdf_threshold = static_cast<float>(options.cdf_threshold.value_or(1.0));
  sel.keep_diagonal = options.keep_diagonal;
  sel.log_keys = log_table();
  select_kernel<<<unsigned(rows), threads, dyn_smem, stream>>>(sel);
  DATTN_CUDA_CHECK(cudaGetLastError());
  return mask;
}

BlockMask download_block_mask(const DeviceBlockMask& mask) {
  BlockMask out;
  out.block_size = mask.block_size();
  out.batch = mask.batch();
  out.heads = mask.heads();
  out.query_blocks = mask.query_blocks();
  out.key_blocks = mask.key_blocks();
  const std::int64_t rows = mask.rows(), nkb = mask.key_blocks();
  out.kept.resize(rows);
  if (rows == 0) return out;
  if (!mask.mask_order())
    throw std::logic_error("download_block_mask: the mask was estimated without with_mask_order");
  const auto stream = static_cast<cudaStream_t>(mask.stream());
  std::vector<int> counts(rows), order(std::size_t(rows * nkb));
  DATTN_CUDA_CHECK(cudaMemcpyAsync(counts.data(), mask.view().counts, counts.size() * sizeof(int),
                                   cudaMemcpyDeviceToHost, stream));
  DATTN_CUDA_CHECK(cudaMemcpyAsync(order.data(), mask.mask_order(), order.size() * sizeof(int),
                                   cudaMemcpyDeviceToHost, stream));
  DATTN_CUDA_CHECK(cudaStreamSynchronize(stream));
  for (std::int64_t r = 0; r < rows; ++r)
    out.kept[r].assign(order.begin() + r * nkb, order.begin() + r * nkb + counts[r]);
  return out;
}

}  // namespace dattn::sparse
