// SPARSE_BLOCK mask steps 2-4 for short rows (see warp_score_select.h): a warp per mask row, for rows of
// at most 128 key blocks with density only. A CTA of kWarpRowsPerCta warps stages one head's key-block
// means and its query blocks' means in shared memory (async copies, one round trip to L2); then each warp
//  - scores key blocks lane + 32 i (i < ceil(key_blocks / 32)) with the score kernel's arithmetic (a
//    sequential sum over the channels in order, separate multiply and add, then the scale),
//  - turns them into the general path's sort keys and bitonic-sorts 32, 64 or 128 slots in registers
//    (slot e = 32 i + lane lives in register i of that lane; slots past the row sort last),
//  - keeps the first density_count() and writes them in mask order and ascending.
#include "attention/backends/sparse_block/cuda/warp_score_select.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "attention/backends/sparse_block/cuda/mask_sort_key.cuh"
#include "core/cuda/check.cuh"
#include "core/cuda/cp_async.cuh"
#include "core/cuda/dependent_launch.cuh"

namespace dattn::sparse {
namespace {

constexpr int kWarpRowBitmapWords = kWarpSelectKeyBlocks / 32;  // a row's kept-block bitmap
constexpr int kWarpRowsPerCta = 8;                              // query blocks (warps) per CTA
constexpr int kThreads = kWarpRowsPerCta * 32;
constexpr std::size_t kMaxSmem = 96 * 1024;

__device__ __forceinline__ u64 shfl_xor_u64(u64 v, int mask) {
  const unsigned lo = __shfl_xor_sync(0xffffffffu, static_cast<unsigned>(v), mask);
  const unsigned hi = __shfl_xor_sync(0xffffffffu, static_cast<unsigned>(v >> 32), mask);
  return (u64(hi) << 32) | lo;
}

// Ascending bitonic sort of the warp's 32 * kSlots slots (a power of two).
template <int kSlots>
__device__ __forceinline__ void warp_bitonic_sort(u64 (&key)[kSlots], int lane) {
#pragma unroll
  for (int size = 2; size <= 32 * kSlots; size <<= 1) {
#pragma unroll
    for (int stride = size / 2; stride > 0; stride >>= 1) {
      if (stride >= 32) {  // the partner slot is in this lane: register i ^ (stride / 32)
#pragma unroll
        for (int i = 0; i < kSlots; ++i) {
          const int p = i ^ (stride / 32);
          if (p > i) {
            const bool ascending = ((i * 32 + lane) & size) == 0;
            if ((key[i] > key[p]) == ascending) {
              const u64 t = key[i];
              key[i] = key[p];
              key[p] = t;
            }
          }
        }
      } else {  // the partner slot is in lane ^ stride, same register
#pragma unroll
        for (int i = 0; i < kSlots; ++i) {
          const u64 other = shfl_xor_u64(key[i], stride);
          const bool lower = (lane & stride) == 0, ascending = ((i * 32 + lane) & size) == 0;
          key[i] = (lower == ascending) ? (key[i] < other ? key[i] : other) : (key[i] < other ? other : key[i]);
        }
      }
    }
  }
}

// Where a row's selection goes: row r of `blocks` (ascending) and `order` (mask order, if not null).
struct RowOutput {
  int* blocks;  // [rows][key_blocks]
  int* counts;  // [rows]
  int* order;   // [rows][key_blocks] or nullptr
  int key_blocks;
};

// Sorts the warp's keys (kExcluded for padding and blocks without valid keys), keeps density_count() of
// the `candidates` real ones and writes row r. `bits` is this warp's zeroed shared bitmap
// (kWarpRowBitmapWords words), used to turn the mask order into the ascending list.
template <int kSortSlots>
__device__ __forceinline__ void select_and_write_row(u64 (&key)[kSortSlots], int candidates, double density, int lane,
                                                     unsigned* bits, std::int64_t r, const RowOutput& out) {
  warp_bitonic_sort<kSortSlots>(key, lane);
  const int keep = density_count(density, candidates), nkb = out.key_blocks;
#pragma unroll
  for (int i = 0; i < kSortSlots; ++i) {
    const int e = i * 32 + lane;  // rank in mask order
    if (e < keep) {
      const int j = key_index(key[i]);
      if (out.order) out.order[r * nkb + e] = j;
      atomicOr(&bits[j / 32], 1u << (j % 32));
    }
  }
  __syncwarp();
  // The ascending list: lane l owns blocks 4l .. 4l + 3; an exclusive scan of their counts places them.
  const unsigned mine_bits = (bits[lane / 8] >> ((lane % 8) * 4)) & 0xFu;
  const int c = __popc(mine_bits);
  const int inclusive = warp_inclusive_sum(c, lane);
  int* row = out.blocks + r * nkb;
  int pos = inclusive - c;
  for (unsigned m = mine_bits; m; m &= m - 1) row[pos++] = lane * 4 + __ffs(static_cast<int>(m)) - 1;
  if (lane == 0) out.counts[r] = keep;
}

// Row stride (floats) of the staged key means: = 4 (mod 32), so that the 16-byte reads of lanes at rows
// lane + 32 i and the same 4 channels hit distinct banks in each quarter-warp phase.
__host__ __device__ constexpr int key_stride(int head_dim) { return (head_dim + 31) / 32 * 32 + 4; }

// Dynamic shared memory of a warp-row CTA: key means [key_blocks][key_stride], query means
// [kWarpRowsPerCta][head_dim], kept-block bitmaps [kWarpRowsPerCta][kWarpRowBitmapWords].
std::size_t warp_rows_smem_bytes(int key_blocks, int head_dim) {
  return sizeof(float) * (std::size_t(key_blocks) * key_stride(head_dim) + std::size_t(kWarpRowsPerCta) * head_dim) +
         sizeof(unsigned) * kWarpRowsPerCta * kWarpRowBitmapWords;
}

struct WarpRowsSmem {
  float* km;
  float* qm;
  unsigned* kept;
  __device__ WarpRowsSmem(float* smem, int key_blocks, int head_dim)
      : km(smem),
        qm(smem + key_blocks * key_stride(head_dim)),
        kept(reinterpret_cast<unsigned*>(qm + kWarpRowsPerCta * head_dim)) {}
};

// Issues async copies of `rows` rows of D floats (global row stride src_stride floats) into shared rows
// of stride dst_stride, zero-filling rows at or past `valid`; the caller commits and waits. All copies are
// in flight at once: one round trip to L2. 16-byte copies when D % 4 == 0 (rows then start 16-byte aligned).
__device__ void stage_rows_async(const float* src, std::int64_t src_stride, int rows, int valid, int D, float* dst,
                                 int dst_stride, int tid, int threads) {
  const int vec = D % 4 == 0 ? 4 : 1, per_row = D / vec;
  const int row_step = threads / per_row, piece_step = threads % per_row;  // no division in the loop
  for (int row = tid / per_row, piece = tid % per_row; row < rows;) {
    const int c = piece * vec;
    float* d = dst + row * dst_stride + c;
    if (row >= valid) {  // (rows past the source are never addressed)
      for (int e = 0; e < vec; ++e) d[e] = 0.0f;
    } else if (vec == 4) {
      cuda::cp_async_16(cuda::smem_addr(d), src + row * src_stride + c);
    } else {
      cuda::cp_async_4(cuda::smem_addr(d), src + row * src_stride + c);
    }
    row += row_step;  // (row, piece) of element i + threads
    piece += piece_step;
    if (piece >= per_row) {
      piece -= per_row;
      ++row;
    }
  }
}

// Warp `warp` selects query block qb0 + warp of (b, h) from the staged means (the CTA has synchronised
// after staging and zeroed sm.kept). kScoreSlots = ceil(key_blocks / 32) slots per lane are scored;
// kSortSlots (the next power of two) are sorted, the rest padding.
template <int kScoreSlots, int kSortSlots>
__device__ __forceinline__ void score_select_warp_row(const WarpScoreSelectArgs& a, const WarpRowsSmem& sm, int b,
                                                      int h, int qb0, int warp, int lane) {
  const int qb = qb0 + warp, nkb = a.key_blocks, D = a.head_dim, stride = key_stride(D);
  if (qb >= a.query_blocks) return;
  float acc[kScoreSlots];
  const float* krow[kScoreSlots];
#pragma unroll
  for (int i = 0; i < kScoreSlots; ++i) {
    acc[i] = 0.0f;
    krow[i] = sm.km + min(i * 32 + lane, nkb - 1) * stride;  // slots past the row read a valid row, unused
  }
  const float* q = sm.qm + warp * D;
  const auto step = [&](float qd, int i, float kd) { acc[i] = score_step(acc[i], qd, kd); };
  int d = 0;
  if (D % 4 == 0) {  // 16-byte reads (rows and q are 16-byte aligned); channels still added in order
    for (; d < D; d += 4) {
      const float4 q4 = *reinterpret_cast<const float4*>(q + d);
#pragma unroll
      for (int i = 0; i < kScoreSlots; ++i) {
        const float4 k4 = *reinterpret_cast<const float4*>(krow[i] + d);
        step(q4.x, i, k4.x);
        step(q4.y, i, k4.y);
        step(q4.z, i, k4.z);
        step(q4.w, i, k4.w);
      }
    }
  }
  for (; d < D; ++d) {  // channels ascending, as the CPU's dot
#pragma unroll
    for (int i = 0; i < kScoreSlots; ++i) step(q[d], i, krow[i][d]);
  }
  const int* valid_count = a.valid_count + std::int64_t(b) * nkb;
  u64 key[kSortSlots];
  int mine = 0;
#pragma unroll
  for (int i = 0; i < kSortSlots; ++i) {
    const int j = i * 32 + lane;
    key[i] = kExcluded;
    if (i < kScoreSlots && j < nkb && valid_count[j] > 0) {
      key[i] = sort_key(__fmul_rn(a.scale, acc[i < kScoreSlots ? i : 0]), j, a.keep_diagonal && j == qb);
      ++mine;
    }
  }
  const int candidates = int(__reduce_add_sync(0xffffffffu, unsigned(mine)));
  select_and_write_row<kSortSlots>(key, candidates, a.density, lane, sm.kept + warp * kWarpRowBitmapWords,
                                   (std::int64_t(b) * a.heads_q + h) * a.query_blocks + qb,
                                   RowOutput{a.blocks, a.counts, a.order, nkb});
}

// grid: (B * Hq, ceil(query_blocks / kWarpRowsPerCta)).
template <int kScoreSlots, int kSortSlots>
__global__ void __launch_bounds__(kThreads) warp_score_select_kernel(WarpScoreSelectArgs a) {
  extern __shared__ __align__(16) float smem[];
  cuda::allow_dependents();  // the attention kernel may be scheduled; it waits for this grid
  const WarpRowsSmem sm(smem, a.key_blocks, a.head_dim);
  const int bh = blockIdx.x, b = bh / a.heads_q, h = bh % a.heads_q, qb0 = blockIdx.y * kWarpRowsPerCta;
  const int tid = threadIdx.x;
  const int hk = h / (a.heads_q / a.heads_kv), D = a.head_dim;
  const std::int64_t cols_q = std::int64_t(a.heads_q) * D, cols_k = std::int64_t(a.heads_kv) * D;
  const float* kg = a.k_mean + std::int64_t(b) * a.key_blocks * cols_k + std::int64_t(hk) * D;
  const float* qg = a.q_mean + (std::int64_t(b) * a.query_blocks + qb0) * cols_q + std::int64_t(h) * D;
  stage_rows_async(kg, cols_k, a.key_blocks, a.key_blocks, D, sm.km, key_stride(D), tid, kThreads);
  stage_rows_async(qg, cols_q, kWarpRowsPerCta, a.query_blocks - qb0, D, sm.qm, D, tid, kThreads);
  cuda::cp_async_commit();
  if (tid < kWarpRowsPerCta * kWarpRowBitmapWords) sm.kept[tid] = 0u;
  cuda::cp_async_wait<0>();
  __syncthreads();
  score_select_warp_row<kScoreSlots, kSortSlots>(a, sm, b, h, qb0, tid / 32, tid % 32);
}

template <int kScoreSlots, int kSortSlots>
void launch_slots(const WarpScoreSelectArgs& args, std::size_t smem, cudaStream_t stream) {
  const auto kernel = warp_score_select_kernel<kScoreSlots, kSortSlots>;
  if (smem > 48 * 1024)
    DATTN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kMaxSmem)));
  const dim3 grid(unsigned(args.batch * args.heads_q),
                  unsigned((args.query_blocks + kWarpRowsPerCta - 1) / kWarpRowsPerCta));
  kernel<<<grid, kThreads, smem, stream>>>(args);
  DATTN_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

bool warp_score_select_fits(int query_blocks, int key_blocks, int head_dim, bool has_cdf) {
  return !has_cdf && key_blocks >= 1 && key_blocks <= kWarpSelectKeyBlocks && head_dim >= 1 &&
         (query_blocks + kWarpRowsPerCta - 1) / kWarpRowsPerCta <= 65535 &&
         warp_rows_smem_bytes(key_blocks, head_dim) <= kMaxSmem;
}

void launch_warp_score_select(const WarpScoreSelectArgs& args, void* stream) {
  const std::size_t smem = warp_rows_smem_bytes(args.key_blocks, args.head_dim);
  const auto st = static_cast<cudaStream_t>(stream);
  switch ((args.key_blocks + 31) / 32) {
    case 1: return launch_slots<1, 1>(args, smem, st);
    case 2: return launch_slots<2, 2>(args, smem, st);
    case 3: return launch_slots<3, 4>(args, smem, st);
    default: return launch_slots<4, 4>(args, smem, st);
  }
}

}  // namespace dattn::sparse
