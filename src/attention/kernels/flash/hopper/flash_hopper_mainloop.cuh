#pragma once
// The consumer mainloop of the Hopper FLASH_ATTN kernel: for one work tile, S = Q K^T (wgmma, both
// operands in 128B-swizzled shared memory), online softmax in registers (exp2 with the scale folded
// in), P to 16 bits in registers, O += P V (register-A wgmma, V read transposed from shared memory).
// The softmax of key tile j overlaps the P V wgmma of tile j-1; with ping-pong the two consumer
// warpgroups take turns issuing their GEMMs (named barriers 1 and 2 pass the turn).
#include <cstdint>

#include "attention/kernels/sm90/flash_hopper_config.cuh"
#include "attention/kernels/sm90/sm90_sync.cuh"
#include "attention/kernels/sm90/wgmma.cuh"

namespace dattn::flash::hopper {

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
// at or past `limit` (tile-local) when limit < 128, and (kHalves) the 64-key halves set in `hidden`
// (bit 0: keys 0-63, bit 1: keys 64-127). Returns whether O must be rescaled by `alpha`.
// The running max is raised only when some row of the warp grew by more than `threshold` (log2
// units): below that the stale max is kept, P may reach 2^threshold (safe in bf16/fp16 and in the
// fp32 sums), and the O rescale is skipped for the whole warp. The final normalisation by the row
// sum makes the result the same softmax whichever max was used. With whole tiles every row sees a
// valid key in its first tile; with hidden halves a row may see none for a while: -inf maxima guarded.
// kCausal: also masks the keys after this thread's rows; `diag` is its first row minus the tile's first
// key (its second row is diag + 8), so tile column c is hidden when c > diag (+ 8).
template <bool kHalves, bool kCausal = false>
__device__ __forceinline__ bool softmax_tile(float* s, float* m, float* l, float* alpha, int limit, int hidden,
                                             int lane, float scale_log2, float threshold, int diag = 0) {
  if constexpr (kCausal) {
    if (diag < 127) {
#pragma unroll
      for (int i = 0; i < 64; ++i) {
        const int col = (i / 4) * 8 + (lane % 4) * 2 + (i & 1);
        if (col > diag + 8 * ((i >> 1) & 1)) s[i] = -INFINITY;
      }
    }
  }
  if (limit < 128 || (kHalves && hidden != 0)) {
#pragma unroll
    for (int i = 0; i < 64; ++i) {
      const int col = (i / 4) * 8 + (lane % 4) * 2 + (i & 1);
      if (col >= limit || (kHalves && ((hidden >> (i / 32)) & 1))) s[i] = -INFINITY;  // i / 32 = col / 64
    }
  }
  float mx[2] = {m[0], m[1]};
#pragma unroll
  for (int i = 0; i < 64; ++i) mx[(i >> 1) & 1] = fmaxf(mx[(i >> 1) & 1], s[i]);
  bool grow = false;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
    grow |= (mx[r] - m[r]) * scale_log2 > threshold;  // m = -inf on the first tile: always
  }
  const bool rescale = __any_sync(0xffffffffu, grow);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    alpha[r] = rescale ? ex2((m[r] - mx[r]) * scale_log2) : 1.f;  // first tile: alpha = 0
    if (kHalves && mx[r] == -INFINITY) alpha[r] = 1.f;           // still no visible key: -inf - -inf
    if (rescale) m[r] = mx[r];
  }
  float ms[2] = {m[0] * scale_log2, m[1] * scale_log2};
  if constexpr (kHalves) {
#pragma unroll
    for (int r = 0; r < 2; ++r)
      if (m[r] == -INFINITY) ms[r] = 0.f;  // every score so far hidden: p = 2^-inf = 0, not NaN
  }
  float sum[2] = {0.f, 0.f};
#pragma unroll
  for (int i = 0; i < 64; ++i) {
    const int r = (i >> 1) & 1;
    s[i] = ex2(fmaf(s[i], scale_log2, -ms[r]));
    sum[r] += s[i];
  }
  l[0] = l[0] * alpha[0] + sum[0];
  l[1] = l[1] * alpha[1] + sum[1];
  return rescale;
}

// Column limit and hidden halves of a work tile's j-th key tile for warpgroup `cw`. Dense: tile j, only
// the last one cut by the valid length. Sparse: the listed tile (KeyTileEntry).
template <KeyWalk kWalk, int kBlockN>
struct KeyTileMask {
  int limit, hidden;
  __device__ KeyTileMask(const int* entries, int j, int n_tiles, int kv_len, int cw) {
    if constexpr (listed_walk(kWalk)) {
      const int e = entries[j];
      limit = max(0, min(kBlockN, kv_len - KeyTileEntry::tile(e) * kBlockN));  // listed tiles start < kv_len
      hidden = kWalk == KeyWalk::ListedHalves ? KeyTileEntry::hidden(e, cw) : 0;
    } else {
      limit = j == n_tiles - 1 ? kv_len - (n_tiles - 1) * kBlockN : kBlockN;
      hidden = 0;
    }
  }
};

// Runs the key tiles of one work tile for consumer warpgroup `cw` (0 or 1): tiles 0 .. n_tiles-1, or
// (listed walks) the n_tiles listed at `entries`. `q_row0` is the work tile's first query row (the
// causal mask compares it with the keys). `ring` is the number of K/V tiles this CTA consumed before
// (the ring position of the first key tile). On return `o` holds the
// unnormalised output and `l` this thread's partial row sums; Q has been released (q_empty).
// Named barriers: 1 and 2 pass the GEMM turn (ping-pong); 5 syncs both consumer warpgroups after
// zeroing padded V rows. The caller opens and closes the turn (begin_turns / end_turns).
template <int kHeadDim, bool kFp16, bool kPingPong, KeyWalk kWalk>
__device__ __forceinline__ void consumer_mainloop(const HopperParams& p, const SmemView<kHeadDim>& sm, int cw,
                                                  const int* entries, int n_tiles, int kv_len, int q_row0,
                                                  int ring, float* o, float* l) {
  using Cfg = HopperConfig<kHeadDim>;
  using Slot = RingSlot<Cfg::kStages>;
  constexpr int kAcc = Cfg::kAcc;
  const int t = threadIdx.x % 128, lane = t % 32;
  float s[64];
  std::uint32_t pr[32];
#pragma unroll
  for (int i = 0; i < kAcc; ++i) o[i] = 0.f;
  float m[2] = {-INFINITY, -INFINITY}, alpha[2];
  l[0] = l[1] = 0.f;
  const std::uint32_t q_addr = smem_addr(sm.q()) + cw * 64 * 128;
  using Mask = KeyTileMask<kWalk, Cfg::kBlockN>;
  constexpr bool kHalves = kWalk == KeyWalk::ListedHalves;
  constexpr bool kCausal = kWalk == KeyWalk::DenseCausal;
  // This thread's first row (warp w of the warpgroup holds rows 16w .. 16w+15 of its 64).
  const int my_row = q_row0 + cw * 64 + (t / 32) * 16 + lane / 4;
  const auto sched_wait = [&] {
    if constexpr (kPingPong) named_sync(1 + cw, 256);
  };
  const auto sched_signal = [&] {
    if constexpr (kPingPong) named_arrive(1 + (cw ^ 1), 256);
  };
  // S of the last key tile is done: Q may be overwritten by the next work tile's load.
  const auto release_q = [&](int j) {
    if (j == n_tiles - 1 && lane == 0) mbar_arrive(sm.q_empty());
  };

  // Tile 0: S, softmax, P.
  {
    const Slot k0(ring);
    const Mask mask(entries, 0, n_tiles, kv_len, cw);
    mbar_wait(sm.k_full(k0.stage), k0.phase);
    sched_wait();
    issue_qk<kHeadDim, kFp16>(s, q_addr, smem_addr(sm.k(k0.stage)));
    sched_signal();
    wgmma_wait<0>();
    fence_regs(s, 64);
    if (lane == 0) mbar_arrive(sm.k_empty(k0.stage));
    release_q(0);
    softmax_tile<kHalves, kCausal>(s, m, l, alpha, mask.limit, mask.hidden, lane, p.scale_log2,
                                   p.rescale_threshold, my_row);
  }
#pragma unroll
  for (int i = 0; i < 32; ++i) pr[i] = pack2<kFp16>(s[2 * i], s[2 * i + 1]);

  for (int j = 1; j < n_tiles; ++j) {
    const Slot cur(ring + j), prev(ring + j - 1);
    const Mask mask(entries, j, n_tiles, kv_len, cw);  // loaded before the waits: its latency hides
    mbar_wait(sm.k_full(cur.stage), cur.phase);
    mbar_wait(sm.v_full(prev.stage), prev.phase);
    sched_wait();
    issue_qk<kHeadDim, kFp16>(s, q_addr, smem_addr(sm.k(cur.stage)));
    issue_pv<kHeadDim, kFp16>(o, pr, smem_addr(sm.v(prev.stage)));
    sched_signal();
    wgmma_wait<1>();  // S done (P V of tile j-1 may still run)
    fence_regs(s, 64);
    if (lane == 0) mbar_arrive(sm.k_empty(cur.stage));
    release_q(j);
    const bool rescale = softmax_tile<kHalves, kCausal>(s, m, l, alpha, mask.limit, mask.hidden, lane,
                                                        p.scale_log2, p.rescale_threshold, my_row - j * Cfg::kBlockN);
    wgmma_wait<0>();
    fence_regs(o, kAcc);
    fence_regs(pr, 32);
    if (lane == 0) mbar_arrive(sm.v_empty(prev.stage));
    if (rescale) {
#pragma unroll
      for (int i = 0; i < kAcc; ++i) o[i] *= alpha[(i >> 1) & 1];
    }
#pragma unroll
    for (int i = 0; i < 32; ++i) pr[i] = pack2<kFp16>(s[2 * i], s[2 * i + 1]);
  }
  {
    const Slot last(ring + n_tiles - 1);
    const int last_limit = Mask(entries, n_tiles - 1, n_tiles, kv_len, cw).limit;
    mbar_wait(sm.v_full(last.stage), last.phase);
    if (kv_len < p.seq_k && last_limit < Cfg::kBlockN) {
      // Key padding cuts the last tile: zero V rows [last_limit, 128) (all 64-column slabs), so that
      // non-finite values stored in padded keys cannot reach O through 0 * NaN. Rows past Sk are
      // already zero (TMA fill). Both consumer warpgroups share the work, then meet on barrier 5.
      const int chunks = (Cfg::kBlockN - last_limit) * Cfg::kChunks;
      for (int idx = cw * 128 + t; idx < chunks; idx += 256) {
        const int r = last_limit + idx / Cfg::kChunks, c = idx % Cfg::kChunks;
        *reinterpret_cast<uint4*>(sm.v(last.stage) + (c / 8) * Cfg::kHalfBytes + r * 128 + (c % 8) * 16) =
            make_uint4(0, 0, 0, 0);
      }
      fence_proxy_async();
      named_sync(5, 256);
    }
    sched_wait();
    issue_pv<kHeadDim, kFp16>(o, pr, smem_addr(sm.v(last.stage)));
    sched_signal();
    wgmma_wait<0>();
    fence_regs(o, kAcc);
    if (lane == 0) mbar_arrive(sm.v_empty(last.stage));
  }
}

}  // namespace dattn::flash::hopper
