#pragma once
// The Hopper (sm_90a) FLASH_ATTN forward kernel, FlashAttention-3 style: one CTA computes 128 query
// rows of one (batch, head); warpgroup 0 is the producer (one thread issues TMA loads of Q once and of
// K/V tiles into a kStages-deep shared-memory ring guarded by full/empty mbarriers); warpgroups 1 and 2
// are consumers, 64 query rows each. Per 128-key tile a consumer computes S = Q K^T with wgmma (both
// operands in 128B-swizzled shared memory), runs the online softmax in registers (exp2 with the scale
// folded in), converts P to 16-bit in registers and accumulates O += P V with the register-A wgmma
// (V read transposed from shared memory). The softmax of tile j overlaps the P V wgmma of tile j-1.
// Head dim 128 or 64 (template parameter; shared-memory rows are split into 64-column = 128-byte
// slabs, one 128B swizzle atom row each: two slabs for D = 128, one for D = 64), any Sq/Sk (TMA
// zero-fills out-of-range rows; keys past the valid length are masked), grouped-query attention,
// key padding by per-batch lengths; batches without a valid key get zeros.
// Built for every architecture; the body is empty except on sm_90a.
#include <cuda.h>  // CUtensorMap (types only; the driver entry point is fetched at run time)
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "attention/backends/flash_attn/cuda/hopper/sm90_sync.cuh"
#include "attention/backends/flash_attn/cuda/hopper/wgmma.cuh"

namespace dattn::flash::hopper {

inline constexpr int kInlineLengths = 64;

struct HopperParams {
  CUtensorMap tm_q;  // 4-D {D, Hq, Sq, B}, box {64, 1, 128, 1} (one 64-column slab), 128B swizzle
  CUtensorMap tm_k;  // 4-D {D, Hkv, Sk, B}, same box
  CUtensorMap tm_v;
  void* out = nullptr;                // [B, Sq, Hq, D]
  const int* key_lengths = nullptr;   // lengths_mode 2 (device memory)
  int inline_lengths[kInlineLengths];  // lengths_mode 1
  int lengths_mode = 0;               // 0: all keys valid
  int seq_q = 0, seq_k = 0, heads_q = 0, group = 1;
  float scale_log2 = 0;  // softmax scale * log2(e), > 0
};

template <int kHeadDim_>
struct HopperConfig {
  static_assert(kHeadDim_ == 64 || kHeadDim_ == 128, "the Hopper kernel supports head dim 64 and 128");
  static constexpr int kBlockM = 128, kBlockN = 128, kHeadDim = kHeadDim_, kStages = 2;
  static constexpr int kThreads = 384;
  static constexpr int kSlabs = kHeadDim / 64;           // 64-column (128-byte) slabs per row
  static constexpr int kChunks = kHeadDim / 8;           // 16-byte chunks per row
  static constexpr int kAcc = kHeadDim / 2;              // O accumulators per consumer thread
  static constexpr int kHalfBytes = 128 * 128;           // one 64-column slab of a 128-row tile
  static constexpr int kTileBytes = kSlabs * kHalfBytes;  // 128 rows x kHeadDim columns x 2 bytes
  static constexpr int kBarrierOffset = kTileBytes * (1 + 2 * kStages);
  static constexpr int kSmemBytes = kBarrierOffset + 256 + 1024;  // + barriers + alignment slack
  static constexpr int kProducerRegs = 24, kConsumerRegs = 240;
};

__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

template <bool kFp16>
__device__ __forceinline__ std::uint32_t pack2(float a, float b) {
  if constexpr (kFp16) {
    __half2 h = __floats2half2_rn(a, b);
    return *reinterpret_cast<std::uint32_t*>(&h);
  } else {
    __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    return *reinterpret_cast<std::uint32_t*>(&h);
  }
}

// Shared-memory ring: Q, then K[kStages], then V[kStages], then the barriers.
template <int kHeadDim>
struct SmemView {
  using Cfg = HopperConfig<kHeadDim>;
  std::uint8_t* base;
  __device__ std::uint8_t* q() const { return base; }
  __device__ std::uint8_t* k(int s) const { return base + Cfg::kTileBytes * (1 + s); }
  __device__ std::uint8_t* v(int s) const { return base + Cfg::kTileBytes * (1 + Cfg::kStages + s); }
  __device__ std::uint64_t* bar(int i) const {
    return reinterpret_cast<std::uint64_t*>(base + Cfg::kBarrierOffset) + i;
  }
  // Barrier indices: 0 q_full; then per stage k_full, k_empty, v_full, v_empty.
  __device__ std::uint64_t* q_full() const { return bar(0); }
  __device__ std::uint64_t* k_full(int s) const { return bar(1 + 4 * s); }
  __device__ std::uint64_t* k_empty(int s) const { return bar(2 + 4 * s); }
  __device__ std::uint64_t* v_full(int s) const { return bar(3 + 4 * s); }
  __device__ std::uint64_t* v_empty(int s) const { return bar(4 + 4 * s); }
};

__device__ __forceinline__ int valid_keys(const HopperParams& p, int b) {
  int n = p.seq_k;
  if (p.lengths_mode == 1) n = min(n, p.inline_lengths[b]);
  if (p.lengths_mode == 2) n = min(n, p.key_lengths[b]);
  return max(n, 0);
}

// S = Q K^T for this consumer's 64 rows: D / 16 k-steps of 16 (4 per 64-column slab).
template <int kHeadDim, bool kFp16>
__device__ __forceinline__ void issue_qk(float* s, std::uint32_t q_addr, std::uint32_t k_addr) {
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < kHeadDim / 16; ++kk) {
    const std::uint32_t off = (kk / 4) * HopperConfig<kHeadDim>::kHalfBytes + (kk % 4) * 32;
    wgmma_ss_m64n128k16<kFp16>(s, make_desc(q_addr + off, 16, 1024), make_desc(k_addr + off, 16, 1024), kk > 0);
  }
  wgmma_commit();
}

// O += P V: 8 k-steps of 16 keys; P from registers, V [keys][D] read transposed (MN-major). D = 128:
// n128 over two 64-column slabs (LBO = slab offset); D = 64: n64 over the single slab.
template <int kHeadDim, bool kFp16>
__device__ __forceinline__ void issue_pv(float* o, const std::uint32_t* p, std::uint32_t v_addr) {
  constexpr std::uint32_t kSlab = HopperConfig<kHeadDim>::kHalfBytes;
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < 8; ++kk) {
    if constexpr (kHeadDim == 128)
      wgmma_rs_m64n128k16<kFp16>(o, p + 4 * kk, make_desc(v_addr + kk * 2048, kSlab, 1024));
    else
      wgmma_rs_m64n64k16<kFp16>(o, p + 4 * kk, make_desc(v_addr + kk * 2048, kSlab, 1024));
  }
  wgmma_commit();
}

// Online-softmax step on a fresh S tile (in place: S becomes unnormalised P in fp32). Masks keys
// at or past `limit` (tile-local) when limit < 128. Returns the O rescale factors of both rows.
__device__ __forceinline__ void softmax_tile(float* s, float* m, float* l, float* alpha, int limit, int lane,
                                             float scale_log2) {
  if (limit < 128) {
#pragma unroll
    for (int i = 0; i < 64; ++i) {
      const int col = (i / 4) * 8 + (lane % 4) * 2 + (i & 1);
      if (col >= limit) s[i] = -INFINITY;
    }
  }
  float mx[2] = {m[0], m[1]};
#pragma unroll
  for (int i = 0; i < 64; ++i) mx[(i >> 1) & 1] = fmaxf(mx[(i >> 1) & 1], s[i]);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
    alpha[r] = ex2((m[r] - mx[r]) * scale_log2);  // m = -inf on the first tile: alpha = 0
    m[r] = mx[r];
  }
  const float ms[2] = {mx[0] * scale_log2, mx[1] * scale_log2};
  float sum[2] = {0.f, 0.f};
#pragma unroll
  for (int i = 0; i < 64; ++i) {
    const int r = (i >> 1) & 1;
    s[i] = ex2(fmaf(s[i], scale_log2, -ms[r]));
    sum[r] += s[i];
  }
  l[0] = l[0] * alpha[0] + sum[0];
  l[1] = l[1] * alpha[1] + sum[1];
}

// Named barriers: 1 and 2 pass the tensor-core "token" between the consumer warpgroups (ping-pong:
// one issues its GEMMs while the other runs its softmax); 3 and 4 sync one warpgroup's epilogue; 5
// syncs both consumer warpgroups after zeroing padded V rows.
template <int kHeadDim, bool kFp16, bool kPingPong>
__device__ __forceinline__ void consumer(const HopperParams& p, const SmemView<kHeadDim>& sm, int cw, int n_tiles,
                                         int kv_len) {
  using Cfg = HopperConfig<kHeadDim>;
  constexpr int kAcc = Cfg::kAcc;
  const int t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
  float o[kAcc], s[64];
  std::uint32_t pr[32];
#pragma unroll
  for (int i = 0; i < 64; ++i) s[i] = 0.f;
#pragma unroll
  for (int i = 0; i < kAcc; ++i) o[i] = 0.f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f}, alpha[2];
  const std::uint32_t q_addr = smem_u32(sm.q()) + cw * 64 * 128;
  const int last_limit = kv_len - (n_tiles - 1) * Cfg::kBlockN;
  const auto sched_wait = [&] {
    if constexpr (kPingPong) named_sync(1 + cw, 256);
  };
  const auto sched_signal = [&] {
    if constexpr (kPingPong) named_arrive(1 + (cw ^ 1), 256);
  };
  if (kPingPong && cw == 1) named_arrive(1, 256);  // warpgroup 0 goes first

  mbar_wait(sm.q_full(), 0);
  // Tile 0: S, softmax, P.
  mbar_wait(sm.k_full(0), 0);
  sched_wait();
  issue_qk<kHeadDim, kFp16>(s, q_addr, smem_u32(sm.k(0)));
  sched_signal();
  wgmma_wait<0>();
  fence_regs(s, 64);
  if (lane == 0) mbar_arrive(sm.k_empty(0));
  softmax_tile(s, m, l, alpha, n_tiles == 1 ? last_limit : 128, lane, p.scale_log2);
#pragma unroll
  for (int i = 0; i < 32; ++i) pr[i] = pack2<kFp16>(s[2 * i], s[2 * i + 1]);

  for (int j = 1; j < n_tiles; ++j) {
    const int st = j % Cfg::kStages, ph = (j / Cfg::kStages) & 1;
    const int pst = (j - 1) % Cfg::kStages, pph = ((j - 1) / Cfg::kStages) & 1;
    mbar_wait(sm.k_full(st), ph);
    mbar_wait(sm.v_full(pst), pph);
    sched_wait();
    issue_qk<kHeadDim, kFp16>(s, q_addr, smem_u32(sm.k(st)));
    issue_pv<kHeadDim, kFp16>(o, pr, smem_u32(sm.v(pst)));
    sched_signal();
    wgmma_wait<1>();  // S done (P V of tile j-1 may still run)
    fence_regs(s, 64);
    if (lane == 0) mbar_arrive(sm.k_empty(st));
    softmax_tile(s, m, l, alpha, j == n_tiles - 1 ? last_limit : 128, lane, p.scale_log2);
    wgmma_wait<0>();
    fence_regs(o, kAcc);
    fence_regs(pr, 32);
    if (lane == 0) mbar_arrive(sm.v_empty(pst));
#pragma unroll
    for (int i = 0; i < kAcc; ++i) o[i] *= alpha[(i >> 1) & 1];
#pragma unroll
    for (int i = 0; i < 32; ++i) pr[i] = pack2<kFp16>(s[2 * i], s[2 * i + 1]);
  }
  {
    const int pst = (n_tiles - 1) % Cfg::kStages, pph = ((n_tiles - 1) / Cfg::kStages) & 1;
    mbar_wait(sm.v_full(pst), pph);
    if (kv_len < p.seq_k && last_limit < Cfg::kBlockN) {
      // Key padding cuts the last tile: zero V rows [last_limit, 128) (all 64-column slabs), so that
      // non-finite values stored in padded keys cannot reach O through 0 * NaN. Rows past Sk are
      // already zero (TMA fill). Both consumer warpgroups share the work, then meet on barrier 5.
      const int chunks = (Cfg::kBlockN - last_limit) * Cfg::kChunks;
      for (int idx = cw * 128 + t; idx < chunks; idx += 256) {
        const int r = last_limit + idx / Cfg::kChunks, c = idx % Cfg::kChunks;
        *reinterpret_cast<uint4*>(sm.v(pst) + (c / 8) * Cfg::kHalfBytes + r * 128 + (c % 8) * 16) =
            make_uint4(0, 0, 0, 0);
      }
      fence_proxy_async();
      named_sync(5, 256);
    }
    sched_wait();
    issue_pv<kHeadDim, kFp16>(o, pr, smem_u32(sm.v(pst)));
    sched_signal();
    wgmma_wait<0>();
    fence_regs(o, kAcc);
    if (lane == 0) mbar_arrive(sm.v_empty(pst));
  }
  if (kPingPong && cw == 0) named_sync(1, 256);  // consume warpgroup 1's last signal

  // Epilogue: normalise (row sums reduced over the quad), convert to 16 bits.
  float inv[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float v = l[r];
    v += __shfl_xor_sync(0xffffffffu, v, 1);
    v += __shfl_xor_sync(0xffffffffu, v, 2);
    inv[r] = v > 0.f ? 1.f / v : 0.f;
  }
  // Stage the 64 x D tile in this warpgroup's Q rows (16-byte chunks XOR-swizzled by row, so the
  // fragment writes are conflict-free), then store whole 2D-byte rows with 16-byte accesses.
  std::uint8_t* stage = sm.q();
  const auto chunk_addr = [&](int r, int c) {  // r: row within this warpgroup, c: 16-byte chunk < kChunks
    return stage + (c / 8) * Cfg::kHalfBytes + (cw * 64 + r) * 128 + (((c & 7) ^ (r & 7)) * 16);
  };
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = warp * 16 + lane / 4 + 8 * r;
#pragma unroll
    for (int nt = 0; nt < Cfg::kChunks; ++nt) {
      const int i = nt * 4 + 2 * r;
      *reinterpret_cast<std::uint32_t*>(chunk_addr(row, nt) + (lane % 4) * 4) =
          pack2<kFp16>(o[i] * inv[r], o[i + 1] * inv[r]);
    }
  }
  named_sync(3 + cw, 128);
  const int b = blockIdx.z, hq = blockIdx.y;
  const int row_base = blockIdx.x * Cfg::kBlockM + cw * 64;
#pragma unroll
  for (int it = 0; it < Cfg::kChunks / 2; ++it) {
    const int idx = it * 128 + t, r = idx / Cfg::kChunks, c = idx % Cfg::kChunks;
    const int row = row_base + r;
    if (row >= p.seq_q) continue;
    const std::int64_t off = ((static_cast<std::int64_t>(b) * p.seq_q + row) * p.heads_q + hq) * Cfg::kHeadDim;
    reinterpret_cast<uint4*>(static_cast<std::uint16_t*>(p.out) + off)[c] =
        *reinterpret_cast<const uint4*>(chunk_addr(r, c));
  }
}

template <int kHeadDim, bool kFp16, bool kPingPong>
__global__ void __launch_bounds__(HopperConfig<kHeadDim>::kThreads, 1)
    flash_hopper_kernel(const __grid_constant__ HopperParams p) {
#if DATTN_SM90A
  using Cfg = HopperConfig<kHeadDim>;
  extern __shared__ std::uint8_t smem_raw[];
  const SmemView<kHeadDim> sm{reinterpret_cast<std::uint8_t*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) &
                                                    ~static_cast<std::uintptr_t>(1023))};
  const int m_block = blockIdx.x, hq = blockIdx.y, b = blockIdx.z;
  const int kv_len = valid_keys(p, b);
  const int n_tiles = (kv_len + Cfg::kBlockN - 1) / Cfg::kBlockN;
  const int tid = threadIdx.x;

  if (n_tiles == 0) {  // no valid key: zeros
    const int rows = min(Cfg::kBlockM, p.seq_q - m_block * Cfg::kBlockM);
    for (int idx = tid; idx < rows * Cfg::kChunks; idx += Cfg::kThreads) {
      const int row = m_block * Cfg::kBlockM + idx / Cfg::kChunks;
      const std::int64_t off = ((static_cast<std::int64_t>(b) * p.seq_q + row) * p.heads_q + hq) * Cfg::kHeadDim;
      reinterpret_cast<uint4*>(static_cast<std::uint16_t*>(p.out) + off)[idx % Cfg::kChunks] = make_uint4(0, 0, 0, 0);
    }
    return;
  }

  if (tid == 0) {
    mbar_init(sm.q_full(), 1);
    for (int s = 0; s < Cfg::kStages; ++s) {
      mbar_init(sm.k_full(s), 1);
      mbar_init(sm.v_full(s), 1);
      mbar_init(sm.k_empty(s), 8);  // one arrival per consumer warp
      mbar_init(sm.v_empty(s), 8);
    }
    mbar_init_fence();
  }
  __syncthreads();

  const int wg = tid / 128;
  if (wg == 0) {
    regs_dealloc<Cfg::kProducerRegs>();
    if (tid == 0) {
      tma_prefetch_desc(&p.tm_q);
      tma_prefetch_desc(&p.tm_k);
      tma_prefetch_desc(&p.tm_v);
      const int hkv = hq / p.group;
      mbar_arrive_expect_tx(sm.q_full(), Cfg::kTileBytes);
      tma_load_4d(sm.q(), &p.tm_q, sm.q_full(), 0, hq, m_block * Cfg::kBlockM, b);
      if constexpr (Cfg::kSlabs == 2)
        tma_load_4d(sm.q() + Cfg::kHalfBytes, &p.tm_q, sm.q_full(), 64, hq, m_block * Cfg::kBlockM, b);
      for (int j = 0; j < n_tiles; ++j) {
        const int st = j % Cfg::kStages, ph = (j / Cfg::kStages) & 1;
        mbar_wait(sm.k_empty(st), ph ^ 1);
        mbar_arrive_expect_tx(sm.k_full(st), Cfg::kTileBytes);
        tma_load_4d(sm.k(st), &p.tm_k, sm.k_full(st), 0, hkv, j * Cfg::kBlockN, b);
        if constexpr (Cfg::kSlabs == 2)
          tma_load_4d(sm.k(st) + Cfg::kHalfBytes, &p.tm_k, sm.k_full(st), 64, hkv, j * Cfg::kBlockN, b);
        mbar_wait(sm.v_empty(st), ph ^ 1);
        mbar_arrive_expect_tx(sm.v_full(st), Cfg::kTileBytes);
        tma_load_4d(sm.v(st), &p.tm_v, sm.v_full(st), 0, hkv, j * Cfg::kBlockN, b);
        if constexpr (Cfg::kSlabs == 2)
          tma_load_4d(sm.v(st) + Cfg::kHalfBytes, &p.tm_v, sm.v_full(st), 64, hkv, j * Cfg::kBlockN, b);
      }
    }
    return;
  }
  regs_alloc<Cfg::kConsumerRegs>();
  consumer<kHeadDim, kFp16, kPingPong>(p, sm, wg - 1, n_tiles, kv_len);
#endif
}

}  // namespace dattn::flash::hopper
