#pragma once
// The half-tile consumer mainloop of the Hopper SAGE_ATTN kernel (flash::HopperTuning::sage_half_tiles):
// the same arithmetic as sage_hopper_mainloop.cuh, but the online softmax steps over the two 64-key
// halves of each 128-key tile (one INT8 K block each), with the halves' scores in two 32-register
// buffers. That lets a warpgroup issue Q K^T of the next half before the softmax of the current one,
// so its softmax overlaps its own tensor work (the next Q K^T and the previous P V) without the 64 more
// registers a second whole score tile would need beside O, the FP8 sum and P at head dim 128.
// No ping-pong: both warpgroups issue when they are ready.
#include <cuda_fp8.h>

#include <climits>
#include <cstdint>
#include <type_traits>

#include "attention/backends/sage_attn/cuda/hopper/sage_hopper_mainloop.cuh"

namespace dattn::sage::hopper {

// S_half = Q8 K8_half^T over one 64-key half of a K tile (rows 64 h .. 64 h + 63 of the stage).
template <int kHeadDim>
__device__ __forceinline__ void issue_qk_half(std::int32_t* s, std::uint64_t q_desc, std::uint64_t k_half_desc) {
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < kHeadDim / 32; ++kk)
    igmma_m64n64k32(s, desc_advance(q_desc, kk * 32), desc_advance(k_half_desc, kk * 32), kk > 0);
  wgmma_commit();
}

// O_tile (+)= P8_half V8_half and the row sums of P8_half, over the 64 keys of one half (2 k-steps).
// v_half_desc / ones_desc point at the half's first key column.
template <int kHeadDim>
__device__ __forceinline__ void issue_pv_half(float* ot, float* lt, const std::uint32_t* p, std::uint64_t v_half_desc,
                                              std::uint64_t ones_desc, int accumulate) {
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < 2; ++kk) {
    if constexpr (kHeadDim == 128)
      qgmma_m64n128k32(ot, p + 4 * kk, desc_advance(v_half_desc, kk * 32), kk > 0 || accumulate);
    else
      qgmma_m64n64k32(ot, p + 4 * kk, desc_advance(v_half_desc, kk * 32), kk > 0 || accumulate);
    qgmma_m64n8k32(lt, p + 4 * kk, desc_advance(ones_desc, kk * 32), kk > 0 || accumulate);
  }
  wgmma_commit();
}

// softmax_tile's step on one half, in place: si (32 int32 dot products, columns (i / 4) * 8 +
// (lane % 4) * 2 + (i & 1) of the half) in, the bits of p * 448 out (kept int-typed: the buffer is also
// a wgmma accumulator, and a float view of it can put conversion moves inside the wgmma's issue stage,
// which makes ptxas serialise every wgmma); alpha and m per row half r = (i >> 1) & 1. `scale` = sq * sk
// of the half's K block; columns >= limit get p = 0 (kMasked; limit may be <= 0: the whole half).
template <bool kMasked>
__device__ __forceinline__ void softmax_half(std::int32_t* si, float* m, float* alpha, float scale, int limit,
                                             int lane) {
  if constexpr (kMasked) {
#pragma unroll
    for (int i = 0; i < 32; ++i) {
      const int col = (i / 4) * 8 + (lane % 4) * 2 + (i & 1);
      if (col >= limit) si[i] = INT_MIN;
    }
  }
  int mi[2] = {INT_MIN, INT_MIN};
#pragma unroll
  for (int i = 0; i < 32; ++i) mi[(i >> 1) & 1] = max(mi[(i >> 1) & 1], si[i]);
  float bias[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float b = mi[r] == INT_MIN ? -INFINITY : __fmul_rn(int_to_float(mi[r]), scale);
    float mx = fmaxf(m[r], b);
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    // A row with no valid key yet keeps m = -inf: alpha = 1 and its p are 0 (masked), never NaN.
    alpha[r] = mx == -INFINITY ? 1.f : ex2(m[r] - mx);
    m[r] = mx;
    bias[r] = mx == -INFINITY ? 0.f : kLog2PScale - mx - 12582912.0f * scale;
  }
#pragma unroll
  for (int i = 0; i < 32; ++i) {
    float p = ex2(fmaf(__int_as_float(si[i] + 0x4B400000), scale, bias[(i >> 1) & 1]));
    if constexpr (kMasked) p = si[i] == INT_MIN ? 0.f : p;
    si[i] = __float_as_int(p);
  }
}

// p * 448 of one half (softmax_half's bits) -> e4m3 in the register-A layout of its 2 k-steps (pack_p's
// mapping).
__device__ __forceinline__ void pack_half(const std::int32_t* sp, std::uint32_t* pr) {
  const auto x = [&](int i) { return __int_as_float(sp[i]); };
#pragma unroll
  for (int kk = 0; kk < 2; ++kk) {
    const int b = 16 * kk;
    pr[4 * kk + 0] = pack_e4m3x4(x(b + 0), x(b + 1), x(b + 4), x(b + 5));
    pr[4 * kk + 1] = pack_e4m3x4(x(b + 2), x(b + 3), x(b + 6), x(b + 7));
    pr[4 * kk + 2] = pack_e4m3x4(x(b + 8), x(b + 9), x(b + 12), x(b + 13));
    pr[4 * kk + 3] = pack_e4m3x4(x(b + 10), x(b + 11), x(b + 14), x(b + 15));
  }
}

// Half-steps folded into O together: 8 halves = 16 wgmma k-steps, as kFoldTiles whole tiles.
inline constexpr int kFoldHalves = 2 * kFoldTiles;

// consumer_mainloop's contract (o = acc, l = the rows' sums of P8; Q released), tile by tile:
//   [S_lo(j) ready in si[0], P_hi(j - 1) in pr]
//   issue QK_hi(j) -> si[1]; issue PV_hi(j - 1); softmax(S_lo(j)); wait all; fold; pack P_lo(j);
//   issue QK_lo(j + 1) -> si[0]; issue PV_lo(j); softmax(S_hi(j)); wait all; fold; pack P_hi(j).
// Each softmax runs while the next half's Q K^T and the previous half's P V are on the tensor core, and
// nothing is in flight across the loop's back edge (ptxas serialises every wgmma of a kernel when groups
// stay pending around a loop: warning C7514).
template <int kHeadDim>
__device__ __forceinline__ void consumer_mainloop_halves(const SageHopperParams& p, const SageSmem<kHeadDim>& sm,
                                                         int cw, int n_tiles, int kv_len, int ring, float q_scale,
                                                         const float* k_scale, float* o, float* l) {
  using Cfg = SageConfig<kHeadDim>;
  using Slot = RingSlot<Cfg::kStages>;
  constexpr int kAcc = Cfg::kAcc;
  constexpr std::uint32_t kHalfRows = 64 * kHeadDim;  // bytes of 64 K8 rows: a whole number of atoms
  const int lane = threadIdx.x % 32;
  std::int32_t si[2][32];
  float ot[kAcc], lt[4] = {0.f, 0.f, 0.f, 0.f};
  std::uint32_t pr[8];
#pragma unroll
  for (int i = 0; i < kAcc; ++i) o[i] = ot[i] = 0.f;
  float m[2] = {-INFINITY, -INFINITY}, alpha[2] = {1.f, 1.f}, c[2] = {1.f, 1.f};
  l[0] = l[1] = 0.f;
  const std::uint64_t q_desc = make_desc_sw(smem_addr(sm.q()) + cw * 64 * kHeadDim, Cfg::kQkAtom, Cfg::kQkSwizzle);
  const std::uint64_t k_desc0 = make_desc_sw(smem_addr(sm.k(0)), Cfg::kQkAtom, Cfg::kQkSwizzle);
  const std::uint64_t v_desc0 = make_desc_sw(smem_addr(sm.v(0)), 1024, 1);
  const std::uint64_t ones_desc = make_desc_sw(smem_addr(sm.ones()), 1024, 1);
  const int last_limit = kv_len - (n_tiles - 1) * Cfg::kBlockN;

  // QK of half h of tile j into dst (the K stage waited for at the lo half).
  const auto issue_qk_of = [&](int j, int h, std::int32_t* dst) {
    const Slot slot(ring + j);
    if (h == 0) mbar_wait(sm.k_full(slot.stage), slot.phase);
    fence_regs(reinterpret_cast<std::uint32_t*>(dst), 32);
    issue_qk_half<kHeadDim>(dst, q_desc, desc_advance(k_desc0, slot.stage * Cfg::kTileBytes + h * kHalfRows));
  };
  int pending = 0;  // halves summed in ot since the last fold (uniform across the warpgroup)
  // PV of half h of tile j with the P in pr (the V stage waited for at the lo half). The operands are
  // settled before the issue stage: otherwise the compiler may materialise known values (ot = 0 * alpha
  // on the first step) with moves between wgmma.fence and the wgmma, which also serialises them.
  const auto issue_pv_of = [&](int j, int h) {
    const Slot slot(ring + j);
    if (h == 0) mbar_wait(sm.v_full(slot.stage), slot.phase);
    fence_regs(ot, kAcc);
    fence_regs(lt, 4);
    fence_regs(pr, 8);
    const std::uint32_t key_bytes = h * 64;  // V^T rows are keys: the hi half starts 64 bytes in
    issue_pv_half<kHeadDim>(ot, lt, pr, desc_advance(v_desc0, slot.stage * Cfg::kTileBytes + key_bytes),
                            desc_advance(ones_desc, key_bytes), pending > 0);
    ++pending;
  };
  // After a wait: fold or rescale for the softmax step just taken (its alpha), then P into pr.
  const auto fold_and_pack = [&](const std::int32_t* sp) {
    fence_regs(ot, kAcc);
    fence_regs(lt, 4);
    fence_regs(pr, 8);
    if (pending == kFoldHalves) {
      // Fold at the old max, then the whole of acc is o: its factor becomes alpha (1 where no row grew).
#pragma unroll
      for (int i = 0; i < kAcc; ++i) o[i] = fmaf(o[i], c[(i >> 1) & 1], ot[i]);
      l[0] = fmaf(l[0], c[0], lt[0]);
      l[1] = fmaf(l[1], c[1], lt[2]);
      c[0] = alpha[0];
      c[1] = alpha[1];
      pending = 0;
    } else {
      c[0] *= alpha[0];
      c[1] *= alpha[1];
      if (__any_sync(0xffffffffu, alpha[0] != 1.f || alpha[1] != 1.f)) {
#pragma unroll
        for (int i = 0; i < kAcc; ++i) ot[i] *= alpha[(i >> 1) & 1];
#pragma unroll
        for (int i = 0; i < 4; ++i) lt[i] *= alpha[(i >> 1) & 1];
      }
    }
    pack_half(sp, pr);
  };
  const auto softmax_of = [&](std::int32_t* sp, float scale, int limit) {
    if (limit < 64)
      softmax_half<true>(sp, m, alpha, scale, limit, lane);
    else
      softmax_half<false>(sp, m, alpha, scale, limit, lane);
  };

  float ks[2] = {__ldg(k_scale), __ldg(k_scale + 1)};  // the K block scales of tile j, loaded a tile ahead
  issue_qk_of(0, 0, si[0]);
  wgmma_wait<0>();
  fence_regs(reinterpret_cast<std::uint32_t*>(si[0]), 32);
  // Tile j's two half-steps; kFirst (j = 0: no P V before it) and kLast (no Q K^T after it) are
  // compile-time so that no wgmma is issued under a branch (ptxas then serialises them: C7515).
  const auto tile = [&](int j, auto first_tag, auto last_tag) {
    constexpr bool kFirst = decltype(first_tag)::value, kLast = decltype(last_tag)::value;
    const float sc0 = __fmul_rn(q_scale, ks[0]), sc1 = __fmul_rn(q_scale, ks[1]);
    const int jn = min(j + 1, n_tiles - 1);
    ks[0] = __ldg(k_scale + 2 * jn);
    ks[1] = __ldg(k_scale + 2 * jn + 1);
    const int limit = kLast ? last_limit : 128;
    // The lo half's softmax beside QK_hi(j) and PV_hi(j - 1).
    issue_qk_of(j, 1, si[1]);
    if constexpr (!kFirst) issue_pv_of(j - 1, 1);
    softmax_of(si[0], sc0, limit);
    wgmma_wait<0>();
    fence_regs(reinterpret_cast<std::uint32_t*>(si[1]), 32);
    if (lane == 0) {
      mbar_arrive(sm.k_empty(Slot(ring + j).stage));  // both halves of K tile j are read
      if (kLast) mbar_arrive(sm.q_empty());
      if (!kFirst) mbar_arrive(sm.v_empty(Slot(ring + j - 1).stage));  // both halves of V tile j - 1 too
    }
    fold_and_pack(si[0]);
    // The hi half's softmax beside QK_lo(j + 1) and PV_lo(j).
    if constexpr (!kLast) issue_qk_of(j + 1, 0, si[0]);
    issue_pv_of(j, 0);
    softmax_of(si[1], sc1, limit - 64);
    wgmma_wait<0>();
    fence_regs(reinterpret_cast<std::uint32_t*>(si[0]), 32);
    fold_and_pack(si[1]);
  };
  using Yes = std::true_type;
  using No = std::false_type;
  if (n_tiles == 1) {
    tile(0, Yes{}, Yes{});
  } else {
    tile(0, Yes{}, No{});
    for (int j = 1; j < n_tiles - 1; ++j) tile(j, No{}, No{});
    tile(n_tiles - 1, No{}, Yes{});
  }
  issue_pv_of(n_tiles - 1, 1);
  wgmma_wait<0>();
  fence_regs(ot, kAcc);
  fence_regs(lt, 4);
  if (lane == 0) mbar_arrive(sm.v_empty(Slot(ring + n_tiles - 1).stage));
#pragma unroll
  for (int i = 0; i < kAcc; ++i) o[i] = fmaf(o[i], c[(i >> 1) & 1], ot[i]);
  l[0] = fmaf(l[0], c[0], lt[0]);
  l[1] = fmaf(l[1], c[1], lt[2]);
}

}  // namespace dattn::sage::hopper
