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
#include <limits>

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
  float scale_log2 = 1;                    // softmax scale * log2(e), nonzero: the softmax runs on exp2
};

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
  // can live there (keeps D=128 under the 99 KB per-block limit of sm_86/sm_89).
  static constexpr bool kAliasQ = kQInRegs && kBlockM <= 2 * kBlockN;
  static constexpr int kQOffset = kAliasQ ? 2 * kTileElems : 4 * kTileElems;
  static constexpr int kElems = kAliasQ ? 4 * kTileElems : 4 * kTileElems + kBlockM * kStride;
  static constexpr int kValidOffset = kElems * int(sizeof(T));  // bytes
  static constexpr int kSmemBytes = kValidOffset + 2 * kBlockN;
  static_assert(kHeadDim % 16 == 0 && kBlockN % 16 == 0, "tiles are whole mma k-slices");
  static_assert(kBlockN <= kThreads, "one thread per key writes the validity bytes");
};

namespace ptx {

__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}
// 16-byte async copy; src_bytes = 0 reads nothing and zero-fills the destination.
__device__ __forceinline__ void cp_async_16(std::uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}
__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ float ex2(float x) {  // 2^x; ex2(-inf) = +0
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

template <typename T>
struct Mma;
template <>
struct Mma<__nv_bfloat16> {
  __device__ __forceinline__ static void run(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                             std::uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  // Two floats rounded to nearest even; `lo` (the lower column) in the low half.
  __device__ __forceinline__ static std::uint32_t pack(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<std::uint32_t*>(&v);
  }
};
template <>
struct Mma<__half> {
  __device__ __forceinline__ static void run(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                             std::uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  __device__ __forceinline__ static std::uint32_t pack(float lo, float hi) {
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<std::uint32_t*>(&v);
  }
};

}  // namespace ptx

// Copies kRows rows of kHeadDim elements (global row stride `stride`) into shared memory at `dst`;
// rows where row_ok(r) is false are zero-filled without being read.
template <class Cfg, int kRows, class RowOk>
__device__ __forceinline__ void load_rows(std::uint32_t dst, const typename Cfg::T* src, std::int64_t stride,
                                          RowOk row_ok) {
  constexpr int kChunks = Cfg::kHeadDim / 8;  // 16-byte chunks per row
  static_assert((kRows * kChunks) % Cfg::kThreads == 0, "whole chunks per thread");
#pragma unroll
  for (int i = 0; i < kRows * kChunks / Cfg::kThreads; ++i) {
    const int c = int(threadIdx.x) + i * Cfg::kThreads;
    const int r = c / kChunks, col = (c % kChunks) * 8;
    const bool ok = row_ok(r);
    ptx::cp_async_16(dst + (r * Cfg::kStride + col) * int(sizeof(typename Cfg::T)), ok ? src + r * stride + col : src,
                     ok ? 16 : 0);
  }
}

// One tile of the online softmax for this thread's rows (row g: c0, c1; row g+8: c2, c3 of each
// m-tile). Turns the raw scores s into p = 2^(s * scale_log2 - m), m the running maximum of the scaled
// scores, and rescales row_sum and O when m grew. `valid` (key validity bytes of the tile) is nullptr
// when every key of the tile is valid. kPositive: scale_log2 > 0, so the raw maximum gives m; else the
// raw minimum does. Hidden keys get the raw value whose scaled score is -inf (p = 0).
template <class Cfg, bool kPositive>
__device__ __forceinline__ void online_softmax(float (&s)[Cfg::kMTiles][Cfg::kBlockN / 8][4],
                                               float (&o)[Cfg::kMTiles][Cfg::kHeadDim / 8][4],
                                               float (&row_max)[Cfg::kMTiles][2], float (&row_sum)[Cfg::kMTiles][2],
                                               const std::uint8_t* valid, float scale_log2) {
  constexpr int MT = Cfg::kMTiles, NT = Cfg::kBlockN / 8, DT = Cfg::kHeadDim / 8;
  constexpr float kInf = std::numeric_limits<float>::infinity();
  constexpr float kHidden = kPositive ? -kInf : kInf;
  const int t = int(threadIdx.x) % 4;
  if (valid != nullptr) {
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const std::uint16_t valid2 = *reinterpret_cast<const std::uint16_t*>(valid + j * 8 + 2 * t);
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

template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks) flash_fwd_kernel(const __grid_constant__ FlashParams p) {
  using T = typename Cfg::T;
  using M = ptx::Mma<T>;
  constexpr int D = Cfg::kHeadDim, BM = Cfg::kBlockM, BN = Cfg::kBlockN, MT = Cfg::kMTiles, ST = Cfg::kStride;
  constexpr int NT = BN / 8;   // 8-key column tiles of S per m-tile
  constexpr int DT = D / 8;    // 8-wide column tiles of O
  constexpr int KS = D / 16;   // k-slices of Q K^T
  constexpr int ES = int(sizeof(T));
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();

  extern __shared__ __align__(16) unsigned char smem[];
  const std::uint32_t s_base = ptx::smem_addr(smem);
  const std::uint32_t s_q = s_base + Cfg::kQOffset * ES;
  std::uint8_t* s_valid = smem + Cfg::kValidOffset;
  auto s_k = [&](int buf) { return s_base + buf * 2 * Cfg::kTileElems * ES; };
  auto s_v = [&](int buf) { return s_base + (buf * 2 + 1) * Cfg::kTileElems * ES; };

  const int tid = int(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int m0 = int(blockIdx.x) * BM, h = int(blockIdx.y), b = int(blockIdx.z), hk = h / p.group;
  int kv_len = p.seq_k;
  if (p.lengths_mode == 1) kv_len = p.inline_lengths[b];
  if (p.lengths_mode == 2) kv_len = p.key_lengths[b];
  kv_len = max(0, min(kv_len, p.seq_k));
  const std::uint8_t* mask = p.key_mask ? p.key_mask + std::int64_t(b) * p.seq_k : nullptr;

  const std::int64_t q_stride = std::int64_t(p.heads_q) * D, kv_stride = std::int64_t(p.heads_kv) * D;
  const std::int64_t q_off = (std::int64_t(b) * p.seq_q + m0) * q_stride + std::int64_t(h) * D;
  const std::int64_t kv_off = std::int64_t(b) * p.seq_k * kv_stride + std::int64_t(hk) * D;
  const T* gk = static_cast<const T*>(p.k) + kv_off;
  const T* gv = static_cast<const T*>(p.v) + kv_off;
  const int q_rows = min(BM, p.seq_q - m0);
  const int n_tiles = (kv_len + BN - 1) / BN;

  // This thread's rows: warp_row + mt*16 + g (+8); its columns 2t, 2t+1 of every 8-wide tile.
  const int warp_row = warp * MT * 16, g = lane / 4, t = lane % 4;
  // Per-lane ldmatrix offsets (bytes). A (Q) and V^T: row lane%16, column half lane/16. K: keys
  // lane%8 + 8*(lane/16), column half (lane/8)%2 -> {b0,b1} of key tile 2j and {b0,b1} of tile 2j+1.
  const std::uint32_t a_lane = ((lane % 16) * ST + (lane / 16) * 8) * ES;
  const std::uint32_t k_lane = ((lane % 8 + (lane / 16) * 8) * ST + ((lane / 8) % 2) * 8) * ES;

  float o[MT][DT][4];
  float row_max[MT][2], row_sum[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int j = 0; j < DT; ++j) o[mt][j][0] = o[mt][j][1] = o[mt][j][2] = o[mt][j][3] = 0.0f;
    row_max[mt][0] = row_max[mt][1] = kNegInf;
    row_sum[mt][0] = row_sum[mt][1] = 0.0f;
  }

  auto key_ok = [&](int j) { return j < kv_len && (mask == nullptr || mask[j] != 0); };
  // Invalid keys are zero-filled in K and V (a padded V row may hold NaN; 0 * NaN must not reach O),
  // and their validity byte makes their score -inf.
  auto issue_k = [&](int n, int buf) {
    const int k0 = n * BN;
    load_rows<Cfg, BN>(s_k(buf), gk + k0 * kv_stride, kv_stride, [&](int r) { return key_ok(k0 + r); });
    if (tid < BN) s_valid[buf * BN + tid] = key_ok(k0 + tid) ? 1 : 0;
  };
  auto issue_v = [&](int n, int buf) {
    const int k0 = n * BN;
    load_rows<Cfg, BN>(s_v(buf), gv + k0 * kv_stride, kv_stride, [&](int r) { return key_ok(k0 + r); });
  };

  if (n_tiles > 0) {
    // Groups in flight: {Q, K0}, {V0}; then per tile one K group and one V group, so wait_group<1>
    // always means "everything but the newest group has landed".
    load_rows<Cfg, BM>(s_q, static_cast<const T*>(p.q) + q_off, q_stride, [&](int r) { return r < q_rows; });
    issue_k(0, 0);
    ptx::cp_async_commit();
    issue_v(0, 0);
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

    for (int n = 0; n < n_tiles; ++n) {
      const int buf = n & 1;
      // K(n) landed; every warp is done with tile n-1 (and with Q's shared memory), so buffer buf^1
      // may be refilled.
      ptx::cp_async_wait<1>();
      __syncthreads();
      if (n + 1 < n_tiles) issue_k(n + 1, buf ^ 1);
      ptx::cp_async_commit();

      // S = Q K^T, 16*MT rows x BN keys per warp.
      float s[MT][NT][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int j = 0; j < NT; ++j) s[mt][j][0] = s[mt][j][1] = s[mt][j][2] = s[mt][j][3] = 0.0f;
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
            M::run(s[mt][2 * jp], a[mt], kb[0], kb[1]);
            M::run(s[mt][2 * jp + 1], a[mt], kb[2], kb[3]);
          }
        }
      }

      // Online softmax in base 2 (the sign of the scale picks max or min of the raw scores).
      const bool masked = mask != nullptr || (n + 1) * BN > kv_len;
      if (p.scale_log2 > 0.0f)
        online_softmax<Cfg, true>(s, o, row_max, row_sum, masked ? s_valid + buf * BN : nullptr, p.scale_log2);
      else
        online_softmax<Cfg, false>(s, o, row_max, row_sum, masked ? s_valid + buf * BN : nullptr, p.scale_log2);

      // V(n) landed (K(n+1) may still be in flight); buffer buf^1's V is free since the barrier above.
      ptx::cp_async_wait<1>();
      __syncthreads();
      if (n + 1 < n_tiles) issue_v(n + 1, buf ^ 1);
      ptx::cp_async_commit();

      // O += P V: the C fragments of key tiles 2kk and 2kk+1 are exactly the A fragment of k-slice kk.
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk) {
        std::uint32_t pa[MT][4];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          pa[mt][0] = M::pack(s[mt][2 * kk][0], s[mt][2 * kk][1]);
          pa[mt][1] = M::pack(s[mt][2 * kk][2], s[mt][2 * kk][3]);
          pa[mt][2] = M::pack(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
          pa[mt][3] = M::pack(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
        }
#pragma unroll
        for (int dp = 0; dp < D / 16; ++dp) {
          std::uint32_t vb[4];  // .trans: {b0, b1} of d tile 2dp, then of d tile 2dp+1
          ptx::ldmatrix_x4_trans(vb, s_v(buf) + a_lane + (kk * 16 * ST + dp * 16) * ES);
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            M::run(o[mt][2 * dp], pa[mt], vb[0], vb[1]);
            M::run(o[mt][2 * dp + 1], pa[mt], vb[2], vb[3]);
          }
        }
      }
    }
  }

  // Normalise and store; a row without a valid key has l = 0 and O = 0 and is written as exact zeros.
  T* go = static_cast<T*>(p.out) + q_off;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int rh = 0; rh < 2; ++rh) {
      float l = row_sum[mt][rh];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      const float inv = l > 0.0f ? 1.0f / l : 0.0f;
      const int row = warp_row + mt * 16 + g + 8 * rh;
      if (row < q_rows) {
        T* dst = go + row * q_stride + 2 * t;
#pragma unroll
        for (int j = 0; j < DT; ++j)
          *reinterpret_cast<std::uint32_t*>(dst + j * 8) = M::pack(o[mt][j][2 * rh] * inv, o[mt][j][2 * rh + 1] * inv);
      }
    }
}

}  // namespace dattn::flash::cuda_impl
