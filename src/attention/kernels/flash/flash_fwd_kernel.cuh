#pragma once
// The FlashAttention-2 forward kernel for sm_80+ (Ampere, Ada, Hopper): one CTA per (query tile, head,
// batch item); each warp owns 16 * kMTiles query rows. K/V tiles of kBlockN keys stream through a
// double-buffered, padded shared memory with cp.async; S = Q K^T and O += P V run on
// mma.sync.m16n8k16 (bf16/fp16 in, fp32 accumulate); the online softmax stays in registers, and P is
// re-packed from the S accumulators straight into the A operand of the P V product.
//
// Fragment layouts (PTX ISA, mma.m16n8k16, g = lane / 4, t = lane % 4):
//   A 16x16 row-major: a0 = (g, 2t..2t+1), a1 = (g+8, 2t..), a2 = (g, 2t+8..), a3 = (g+8, 2t+8..)
//   B 16x8 (k x n):    b0 = (k 2t..2t+1, n g), b1 = (k 2t+8.., n g)
//   C 16x8 fp32:       c0,c1 = (g, 2t..2t+1), c2,c3 = (g+8, 2t..2t+1)
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "core/cuda/cp_async.cuh"

namespace dattn::flash::cuda_impl {

// Batches up to this size pass their key lengths inside the kernel parameters (no upload, no allocation).
inline constexpr int kInlineLengths = 64;

struct FlashParams {
  const void* q = nullptr;  // [B, Sq, Hq, D]
  const void* k = nullptr;  // [B, Sk, Hkv, D]
  const void* v = nullptr;  // [B, Sk, Hkv, D]
  void* out = nullptr;      // [B, Sq, Hq, D]
  const std::uint8_t* key_mask = nullptr;  // [B, Sk], nonzero = valid; nullptr: none
  const int* key_lengths = nullptr;        // [B] on the device (lengths_mode 2)
  int inline_lengths[kInlineLengths] = {};  // lengths_mode 1
  int lengths_mode = 0;                    // 0: every key valid, 1: inline_lengths, 2: key_lengths
  int seq_q = 0, seq_k = 0, heads_q = 0, heads_kv = 0, group = 1;  // group = Hq / Hkv
  std::int64_t q_stride = 0, kv_stride = 0;  // elements between rows: Hq * D, Hkv * D
  float scale_log2 = 1;                    // softmax scale * log2(e), nonzero: the softmax runs on exp2
};

// SPARSE_BLOCK: the kept key blocks of each (b, h, query block), as in sparse::DeviceKeyBlocks. A type of
// its own so that the dense kernel's parameters (and code) stay as they are.
struct FlashSparseParams : FlashParams {
  const int* blocks = nullptr;  // row r at blocks + r * key_blocks: counts[r] ascending key block indices
  const int* counts = nullptr;  // r = (b * heads_q + h) * query_blocks + qb
  int query_blocks = 0, key_blocks = 0;
};
template <int kSparseBlock>
using KernelParams = std::conditional_t<kSparseBlock == 0, FlashParams, FlashSparseParams>;

// Tile shape of one instantiation. Shared memory: [K0][V0][K1][V1] (kBlockN rows each), Q, then one
// validity byte per key of each buffer. Rows are padded by 16 bytes so that the 8 rows one ldmatrix
// phase reads start in 8 different 4-bank groups (conflict-free for every head dim, no swizzle).
template <typename T_, int kHeadDim_, int kWarps_, int kMTiles_, int kBlockN_, bool kQInRegs_, int kMinBlocks_>
struct FlashConfig {
  using T = T_;
  static constexpr int kHeadDim = kHeadDim_, kWarps = kWarps_, kMTiles = kMTiles_, kBlockN = kBlockN_;
  static constexpr bool kQInRegs = kQInRegs_;  // Q fragments loaded once into registers
  static constexpr int kMinBlocks = kMinBlocks_;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kBlockM = kWarps * kMTiles * 16;
  static constexpr int kStride = kHeadDim + 8;          // elements per shared-memory row
  static constexpr int kTileElems = kBlockN * kStride;  // one K or V buffer
  // Q in registers leaves its shared memory free before the second K/V buffer is first written, so it
  // can live there (a smaller footprint: more CTAs per SM).
  static constexpr bool kAliasQ = kQInRegs && kBlockM <= 2 * kBlockN;
  static constexpr int kQOffset = kAliasQ ? 2 * kTileElems : 4 * kTileElems;
  static constexpr int kElems = kAliasQ ? 4 * kTileElems : 4 * kTileElems + kBlockM * kStride;
  static constexpr int kValidOffset = kElems * int(sizeof(T));  // bytes
  static constexpr int kSmemBytes = kValidOffset + 2 * kBlockN;
  static_assert(kHeadDim % 16 == 0 && kBlockN % 16 == 0, "tiles are whole mma k-slices");
  static_assert(kBlockN <= kThreads, "one thread per key writes the validity bytes");
};

namespace ptx {

using dattn::cuda::cp_async_16;
using dattn::cuda::cp_async_commit;
using dattn::cuda::cp_async_wait;
using dattn::cuda::smem_addr;

__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void st_shared_u8(std::uint32_t addr, std::uint32_t v) {
  asm volatile("st.shared.u8 [%0], %1;\n" ::"r"(addr), "r"(v));
}
__device__ __forceinline__ std::uint32_t ld_shared_u16(std::uint32_t addr) {
  std::uint16_t v;
  asm volatile("ld.shared.u16 %0, [%1];\n" : "=h"(v) : "r"(addr));
  return v;
}
// %ctaid through volatile asm, so that offsets derived from it are recomputed where used instead of
// being kept live (in registers or spilled) across the main loop.
template <int kDim>
__device__ __forceinline__ std::uint32_t ctaid() {
  std::uint32_t v;
  if constexpr (kDim == 0) asm volatile("mov.u32 %0, %%ctaid.x;\n" : "=r"(v));
  if constexpr (kDim == 1) asm volatile("mov.u32 %0, %%ctaid.y;\n" : "=r"(v));
  if constexpr (kDim == 2) asm volatile("mov.u32 %0, %%ctaid.z;\n" : "=r"(v));
  return v;
}
__device__ __forceinline__ float ex2(float x) {  // 2^x; ex2(-inf) = +0
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// D (fp32 16x8) += A (16x16) * B (16x8), bf16 or fp16 inputs.
template <typename T>
__device__ __forceinline__ void mma(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
#define DATTN_MMA(type)                                                                                   \
  asm("mma.sync.aligned.m16n8k16.row.col.f32." type "." type ".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, " \
      "{%8, %9}, {%0, %1, %2, %3};\n"                                                                    \
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])                                                   \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1))
  if constexpr (std::is_same_v<T, __nv_bfloat16>) DATTN_MMA("bf16"); else DATTN_MMA("f16");
#undef DATTN_MMA
}
// Two floats rounded to nearest even into T; `lo` (the lower column) in the low half.
template <typename T>
__device__ __forceinline__ std::uint32_t pack(float lo, float hi) {
  std::uint32_t r;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    memcpy(&r, &v, 4);
  } else {
    const __half2 v = __floats2half2_rn(lo, hi);
    memcpy(&r, &v, 4);
  }
  return r;
}

}  // namespace ptx

// Copies kRows rows of kHeadDim elements (global row stride `stride`) into shared memory at `dst`;
// rows where row_ok(r) is false are zero-filled without being read. Each thread copies one 16-byte
// column chunk of every (kThreads / chunks per row)-th row, walking one pointer (few live registers).
template <class Cfg, int kRows, class T, class RowOk>
__device__ __forceinline__ void load_rows(std::uint32_t dst, const T* src, std::int64_t stride, RowOk row_ok) {
  constexpr int kChunks = Cfg::kHeadDim / 8, kRowStep = Cfg::kThreads / kChunks;  // 16-byte chunks per row
  static_assert(Cfg::kThreads % kChunks == 0 && kRows % kRowStep == 0, "whole chunks per thread");
  const int r0 = int(threadIdx.x) / kChunks, col = (int(threadIdx.x) % kChunks) * 8;
  const T* g = src + r0 * stride + col;
  dst += (r0 * Cfg::kStride + col) * int(sizeof(T));
#pragma unroll
  for (int i = 0; i < kRows / kRowStep; ++i) {
    const bool ok = row_ok(r0 + i * kRowStep);
    ptx::cp_async_16(dst + i * kRowStep * Cfg::kStride * int(sizeof(T)), ok ? g : src, ok ? 16 : 0);
    g += kRowStep * stride;
  }
}

// One tile of the online softmax for this thread's rows (row g: c0, c1; row g+8: c2, c3 of each
// m-tile). Turns the raw scores s into p = 2^(s * scale_log2 - m), m the running maximum of the scaled
// scores, and rescales row_sum and O when m grew. `valid`: shared-memory address of the tile's key
// validity bytes, 0 when every key of the tile is valid. kPositive: scale_log2 > 0, so the raw maximum
// gives m; else the raw minimum does. Hidden keys get the raw value whose scaled score is -inf (p = 0).
template <class Cfg, bool kPositive>
__device__ __forceinline__ void online_softmax(float (&s)[Cfg::kMTiles][Cfg::kBlockN / 8][4],
                                               float (&o)[Cfg::kMTiles][Cfg::kHeadDim / 8][4],
                                               float (&row_max)[Cfg::kMTiles][2], float (&row_sum)[Cfg::kMTiles][2],
                                               std::uint32_t valid, float scale_log2) {
  constexpr int MT = Cfg::kMTiles, NT = Cfg::kBlockN / 8, DT = Cfg::kHeadDim / 8;
  constexpr float kInf = std::numeric_limits<float>::infinity();
  constexpr float kHidden = kPositive ? -kInf : kInf;
  const int t = int(threadIdx.x) % 4;
  if (valid != 0) {
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const std::uint32_t valid2 = ptx::ld_shared_u16(valid + j * 8 + 2 * t);
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          if (!((valid2 >> (8 * (e & 1))) & 0xff)) s[mt][j][e] = kHidden;
    }
  }
  float alpha[MT][2];
  bool grew = false;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int rh = 0; rh < 2; ++rh) {
      float mx = kHidden;
#pragma unroll
      for (int j = 0; j < NT; ++j)
        mx = kPositive ? fmaxf(mx, fmaxf(s[mt][j][2 * rh], s[mt][j][2 * rh + 1]))
                       : fminf(mx, fminf(s[mt][j][2 * rh], s[mt][j][2 * rh + 1]));
      mx *= scale_log2;  // the largest scaled score; -inf when no key of the tile is valid
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));  // the 4 threads of a quad share a row
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      const float new_max = fmaxf(row_max[mt][rh], mx);
      // No valid key yet: subtract 0 instead of -inf, so -inf - -inf never makes a NaN.
      const float m_use = new_max == -kInf ? 0.0f : new_max;
      const bool same = new_max == row_max[mt][rh];
      alpha[mt][rh] = same ? 1.0f : ptx::ex2(row_max[mt][rh] - m_use);  // 0 while the row had no valid key
      grew |= !same;
      row_max[mt][rh] = new_max;
      float sum = 0.0f;
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int e = 2 * rh; e < 2 * rh + 2; ++e) {
          s[mt][j][e] = ptx::ex2(fmaf(s[mt][j][e], scale_log2, -m_use));
          sum += s[mt][j][e];
        }
      row_sum[mt][rh] = row_sum[mt][rh] * alpha[mt][rh] + sum;  // per-thread partial; reduced at the end
    }
  // Once the running maxima settle most tiles leave them unchanged: skip the O rescale warp-wide.
  if (__any_sync(0xffffffffu, grew)) {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int j = 0; j < DT; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) o[mt][j][e] *= alpha[mt][e / 2];
  }
}

// kSparseBlock = 0: dense, the CTA visits every key tile in order. 64 or 128 (SPARSE_BLOCK's block size):
// the CTA's query tile lies inside one query block, and it visits only the key tiles of that block's
// kept key blocks, ascending (kSparseBlock / kBlockN consecutive tiles per block).
// kCausal (dense only; Sq == Sk): query i sees keys j <= i. Key tiles wholly after the CTA's last row
// are not visited; in a tile that crosses a warp's rows the keys after each row get the hidden score.
// A compile-time branch: the non-causal instantiations are unchanged.
template <class Cfg, int kSparseBlock = 0, bool kCausal = false>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks)
    flash_fwd_kernel(const __grid_constant__ KernelParams<kSparseBlock> p) {
  using T = typename Cfg::T;
  constexpr int D = Cfg::kHeadDim, BM = Cfg::kBlockM, BN = Cfg::kBlockN, MT = Cfg::kMTiles, ST = Cfg::kStride;
  constexpr bool kSparse = kSparseBlock != 0;
  constexpr int TPB = kSparse ? kSparseBlock / BN : 1;  // key tiles per kept block
  static_assert(!kSparse || (kSparseBlock % BM == 0 && kSparseBlock % BN == 0),
                "a query tile lies in one query block; a key block is whole key tiles");
  static_assert(!(kSparse && kCausal), "causal attention is dense only");
  constexpr int NT = BN / 8;   // 8-key column tiles of S per m-tile
  constexpr int DT = D / 8;    // 8-wide column tiles of O
  constexpr int KS = D / 16;   // k-slices of Q K^T
  constexpr int ES = int(sizeof(T));
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();

  extern __shared__ __align__(16) unsigned char smem[];
  const std::uint32_t s_base = ptx::smem_addr(smem);
  const std::uint32_t s_q = s_base + Cfg::kQOffset * ES;
  const std::uint32_t s_valid = s_base + Cfg::kValidOffset;
  auto s_k = [&](int buf) { return s_base + buf * 2 * Cfg::kTileElems * ES; };
  auto s_v = [&](int buf) { return s_base + (buf * 2 + 1) * Cfg::kTileElems * ES; };

  const int tid = int(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int m0 = int(blockIdx.x) * BM, h = int(blockIdx.y), b = int(blockIdx.z);
  int kv_len = p.seq_k;
  if (p.lengths_mode == 1) kv_len = p.inline_lengths[b];
  if (p.lengths_mode == 2) kv_len = p.key_lengths[b];
  kv_len = max(0, min(kv_len, p.seq_k));
  const std::int64_t q_stride = p.q_stride, kv_stride = p.kv_stride;
  const std::int64_t q_off = (std::int64_t(b) * p.seq_q + m0) * q_stride + std::int64_t(h) * D;
  const int q_rows = min(BM, p.seq_q - m0);

  // Sparse: this CTA's list of kept blocks (recomputed from %ctaid where used, like the K/V offsets).
  auto list_row = [&]() -> std::int64_t {
    if constexpr (kSparse) {
      const int qb = int(ptx::ctaid<0>()) * BM / kSparseBlock;
      return (std::int64_t(ptx::ctaid<2>()) * p.heads_q + int(ptx::ctaid<1>())) * p.query_blocks + qb;
    } else {
      return 0;
    }
  };
  // Step w of the key-tile walk visits key tile tile(w): w itself when dense, else tile w % TPB of the
  // (w / TPB)-th kept block.
  auto tile = [&](int w) {
    if constexpr (kSparse) return p.blocks[list_row() * p.key_blocks + w / TPB] * TPB + w % TPB;
    else return w;
  };
  int n_tiles = (kv_len + BN - 1) / BN;  // steps of the walk
  if constexpr (kCausal) n_tiles = min(n_tiles, (m0 + q_rows - 1) / BN + 1);  // up to the last row's own key
  if constexpr (kSparse) {
    // Every tile of every kept block, except those that start at or past kv_len (blocks ascend, so only
    // trailing blocks lie wholly past it, and only the last remaining one can end past it).
    const std::int64_t r = list_row();
    const int* list = p.blocks + r * p.key_blocks;
    int nb = min(p.counts[r], p.key_blocks);
    while (nb > 0 && list[nb - 1] * kSparseBlock >= kv_len) --nb;
    n_tiles = nb == 0 ? 0 : (nb - 1) * TPB + min(TPB, (kv_len - list[nb - 1] * kSparseBlock + BN - 1) / BN);
  }

  // This thread's rows: warp_row + mt*16 + g (+8); its columns 2t, 2t+1 of every 8-wide tile.
  const int warp_row = warp * MT * 16, g = lane / 4, t = lane % 4;
  // Per-lane ldmatrix offsets (bytes). A (Q) and V^T: row lane%16, column half lane/16. K: keys
  // lane%8 + 8*(lane/16), column half (lane/8)%2 -> {b0,b1} of key tile 2j and {b0,b1} of tile 2j+1.
  const std::uint32_t a_lane = ((lane % 16) * ST + (lane / 16) * 8) * ES;
  const std::uint32_t k_lane = ((lane % 8 + (lane / 16) * 8) * ST + ((lane / 8) % 2) * 8) * ES;

  float o[MT][DT][4] = {}, row_max[MT][2], row_sum[MT][2] = {};
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) row_max[mt][0] = row_max[mt][1] = kNegInf;

  // The K/V offset and the key mask row of this CTA are recomputed per tile (from %ctaid) rather than
  // held in registers across the loop: D=128 runs at the 255-register limit.
  auto kv_rows = [&](const void* base, int k0) {
    const std::int64_t bz = ptx::ctaid<2>(), kh = int(ptx::ctaid<1>()) / p.group;
    return static_cast<const T*>(base) + ((bz * p.seq_k + k0) * kv_stride + kh * D);
  };
  auto mask_row = [&]() { return p.key_mask + std::int64_t(ptx::ctaid<2>()) * p.seq_k; };
  // Invalid keys are zero-filled in K and V (a padded V row may hold NaN; 0 * NaN must not reach O),
  // and their validity byte makes their score -inf.
  auto issue = [&](bool is_k, int n, int buf) {
    const int k0 = n * BN;
    const std::uint8_t* mask = p.key_mask ? mask_row() + k0 : nullptr;
    auto ok = [&](int r) { return k0 + r < kv_len && (mask == nullptr || mask[r] != 0); };
    load_rows<Cfg, BN>(is_k ? s_k(buf) : s_v(buf), kv_rows(is_k ? p.k : p.v, k0), kv_stride, ok);
    if (is_k && tid < BN) ptx::st_shared_u8(s_valid + buf * BN + tid, ok(tid) ? 1 : 0);
  };

  if (n_tiles > 0) {
    // Groups in flight: {Q, K0}, {V0}; then per tile one K group and one V group, so wait_group<1>
    // always means "everything but the newest group has landed".
    // The walk's current and next tiles, carried so that the list reads overlap the math (sparse only).
    int n_cur = tile(0), n_nxt = n_tiles > 1 ? tile(1) : 0;
    load_rows<Cfg, BM>(s_q, static_cast<const T*>(p.q) + q_off, q_stride, [&](int r) { return r < q_rows; });
    issue(true, n_cur, 0);
    ptx::cp_async_commit();
    issue(false, n_cur, 0);
    ptx::cp_async_commit();

    std::uint32_t qf[Cfg::kQInRegs ? MT : 1][Cfg::kQInRegs ? KS : 1][4];
    if constexpr (Cfg::kQInRegs) {
      ptx::cp_async_wait<1>();
      __syncthreads();
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int ks = 0; ks < KS; ++ks)
          ptx::ldmatrix_x4(qf[mt][ks], s_q + a_lane + ((warp_row + mt * 16) * ST + ks * 16) * ES);
    }

    for (int w = 0; w < n_tiles; ++w) {
      const int n = kSparse ? n_cur : w, n_next = kSparse ? n_nxt : w + 1;  // key tiles of steps w, w+1
      const int buf = w & 1;
      // K(n) landed; all warps are done with the previous tile (and Q's shared memory): refill buf^1.
      ptx::cp_async_wait<1>();
      __syncthreads();
      if (w + 1 < n_tiles) issue(true, n_next, buf ^ 1);
      ptx::cp_async_commit();

      // S = Q K^T, 16*MT rows x BN keys per warp.
      float s[MT][NT][4] = {};
#pragma unroll
      for (int ks = 0; ks < KS; ++ks) {
        std::uint32_t a[MT][4];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          if constexpr (Cfg::kQInRegs) {
#pragma unroll
            for (int i = 0; i < 4; ++i) a[mt][i] = qf[mt][ks][i];
          } else {
            ptx::ldmatrix_x4(a[mt], s_q + a_lane + ((warp_row + mt * 16) * ST + ks * 16) * ES);
          }
        }
#pragma unroll
        for (int jp = 0; jp < NT / 2; ++jp) {
          std::uint32_t kb[4];
          ptx::ldmatrix_x4(kb, s_k(buf) + k_lane + (jp * 16 * ST + ks * 16) * ES);
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            ptx::mma<T>(s[mt][2 * jp], a[mt], kb[0], kb[1]);
            ptx::mma<T>(s[mt][2 * jp + 1], a[mt], kb[2], kb[3]);
          }
        }
      }

      if constexpr (kCausal) {
        // Row r sees keys <= r: only a tile reaching past this warp's first row needs the mask. The
        // hidden raw score is the one whose scaled value is -inf (as for padding in online_softmax).
        const int row0 = int(ptx::ctaid<0>()) * BM + warp_row + g;  // row of s[mt][.][0], +mt*16, +8
        const int key0 = n * BN + 2 * t;                             // key of s[.][0][0], +j*8, +1
        if (n * BN + BN - 1 > row0 - g) {
          const float hidden_raw = p.scale_log2 > 0.0f ? kNegInf : -kNegInf;
#pragma unroll
          for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int j = 0; j < NT; ++j)
#pragma unroll
              for (int e = 0; e < 4; ++e)
                if (key0 + j * 8 + (e & 1) > row0 + mt * 16 + 8 * (e / 2)) s[mt][j][e] = hidden_raw;
        }
      }

      // Online softmax in base 2 (the sign of the scale picks max or min of the raw scores).
      const bool masked = p.key_mask != nullptr || (n + 1) * BN > kv_len;
      const std::uint32_t valid = masked ? s_valid + buf * BN : 0u;
      if (p.scale_log2 > 0.0f) online_softmax<Cfg, true>(s, o, row_max, row_sum, valid, p.scale_log2);
      else online_softmax<Cfg, false>(s, o, row_max, row_sum, valid, p.scale_log2);

      // P in the input dtype as the A fragments of P V (C fragments of key tiles 2kk, 2kk+1 = A fragment
      // of k-slice kk). Packed before the barrier so S dies early: no spills at D=128 on sm_90a.
      std::uint32_t pa[BN / 16][MT][4];
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk)
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          pa[kk][mt][0] = ptx::pack<T>(s[mt][2 * kk][0], s[mt][2 * kk][1]);
          pa[kk][mt][1] = ptx::pack<T>(s[mt][2 * kk][2], s[mt][2 * kk][3]);
          pa[kk][mt][2] = ptx::pack<T>(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
          pa[kk][mt][3] = ptx::pack<T>(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
        }

      // V(n) landed (K(n_next) may still be in flight); buffer buf^1's V is free since the barrier above.
      ptx::cp_async_wait<1>();
      __syncthreads();
      if (w + 1 < n_tiles) issue(false, n_next, buf ^ 1);
      ptx::cp_async_commit();
      if constexpr (kSparse) {  // read the tile after next while P V runs
        n_cur = n_nxt;
        if (w + 2 < n_tiles) n_nxt = tile(w + 2);
      }

#pragma unroll  // O += P V
      for (int kk = 0; kk < BN / 16; ++kk) {
#pragma unroll
        for (int dp = 0; dp < D / 16; ++dp) {
          std::uint32_t vb[4];  // .trans: {b0, b1} of d tile 2dp, then of d tile 2dp+1
          ptx::ldmatrix_x4_trans(vb, s_v(buf) + a_lane + (kk * 16 * ST + dp * 16) * ES);
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            ptx::mma<T>(o[mt][2 * dp], pa[kk][mt], vb[0], vb[1]);
            ptx::mma<T>(o[mt][2 * dp + 1], pa[kk][mt], vb[2], vb[3]);
          }
        }
      }
    }
  }

  // Normalise and store; a row without a valid key has l = 0 and O = 0 and is written as exact zeros.
  // NaN needs no guard in the softmax: fmaxf skips a NaN score, but its p = ex2(NaN) poisons l and O.
  const int em0 = int(ptx::ctaid<0>()) * BM, eh = int(ptx::ctaid<1>()), eb = int(ptx::ctaid<2>());
  const int out_rows = min(BM, p.seq_q - em0);
  T* go = static_cast<T*>(p.out) + (std::int64_t(eb) * p.seq_q + em0) * q_stride + std::int64_t(eh) * D;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int rh = 0; rh < 2; ++rh) {
      float l = row_sum[mt][rh];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      // l = 0 only without a valid key (exact zeros); a NaN l (a NaN score) must give NaN, not zeros.
      const float inv = l == 0.0f ? 0.0f : 1.0f / l;
      const int row = warp_row + mt * 16 + g + 8 * rh;
      if (row < out_rows) {
        T* dst = go + row * q_stride + 2 * t;
#pragma unroll
        for (int j = 0; j < DT; ++j) {
          const std::uint32_t packed = ptx::pack<T>(o[mt][j][2 * rh] * inv, o[mt][j][2 * rh + 1] * inv);
          *reinterpret_cast<std::uint32_t*>(dst + j * 8) = packed;
        }
      }
    }
}

}  // namespace dattn::flash::cuda_impl
