#pragma once
// The consumer mainloop of the Hopper SAGE_ATTN kernel, for one work tile and one consumer warpgroup
// (64 query rows): S = Q8 K8^T in exact int32 (IGMMA), scores to fp32 with the block scales (an exact
// add-magic-number conversion instead of I2F), the online softmax of docs/backend-semantics.md step 6
// with the exact running max (P must stay in [0, 1] for its e4m3 scaling by 448), P to e4m3 in registers
// and O_tile = P8 V8 (QGMMA) into the tensor core's own fp32 accumulator, with the row sums l of P8 from
// a second small QGMMA against a tile of ones; both are added to O and l every kFoldTiles tiles, so
// their reduced-precision accumulation never spans more than 16 wgmma steps.
// The softmax of tile j overlaps the P.V wgmma of tile j - 1; ping-pong (optional) as in FLASH_ATTN.
#include <cuda_fp8.h>

#include <climits>
#include <cstdint>

#include "attention/kernels/sm90/sm90_sync.cuh"
#include "attention/backends/sage_attn/cuda/hopper/sage_hopper_config.cuh"
#include "attention/backends/sage_attn/cuda/hopper/sage_wgmma.cuh"

namespace dattn::sage::hopper {

using flash::hopper::ex2;
using flash::hopper::fence_regs;
using flash::hopper::mbar_arrive;
using flash::hopper::mbar_wait;
using flash::hopper::named_arrive;
using flash::hopper::named_sync;
using flash::hopper::RingSlot;
using flash::hopper::smem_addr;
using flash::hopper::wgmma_commit;
using flash::hopper::wgmma_fence;
using flash::hopper::wgmma_wait;

// A descriptor advanced by `bytes` along its operand's rows: the start address is the low field, in
// 16-byte units, and no operand here comes near its 14-bit limit (shared memory is < 256 KB).
__device__ __forceinline__ std::uint64_t desc_advance(std::uint64_t desc, std::uint32_t bytes) {
  return desc + (bytes >> 4);
}

// S = Q8 K8^T from the descriptors of the Q block and the K tile (built once per kernel: recomputing
// them per tile cost ~80 uniform-datapath instructions per warp and tile).
template <int kHeadDim>
__device__ __forceinline__ void issue_qk(std::int32_t* s, std::uint64_t q_desc, std::uint64_t k_desc) {
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < kHeadDim / 32; ++kk)
    igmma_m64n128k32(s, desc_advance(q_desc, kk * 32), desc_advance(k_desc, kk * 32), kk > 0);
  wgmma_commit();
}

// O_tile (+)= P8 V8 over 128 keys (4 k-steps of 32); V^T rows are 128 bytes (128B swizzle). `accumulate`
// = 0 starts a fresh tile sum. The row sums of P8 go into `lt` in the same group (ones_desc): l is the
// sum of the quantized p, which saves an fp32 add per score and normalises by the weights P.V used.
template <int kHeadDim>
__device__ __forceinline__ void issue_pv(float* ot, float* lt, const std::uint32_t* p, std::uint64_t v_desc,
                                         std::uint64_t ones_desc, int accumulate) {
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
    if constexpr (kHeadDim == 128)
      qgmma_m64n128k32(ot, p + 4 * kk, desc_advance(v_desc, kk * 32), kk > 0 || accumulate);
    else
      qgmma_m64n64k32(ot, p + 4 * kk, desc_advance(v_desc, kk * 32), kk > 0 || accumulate);
    qgmma_m64n8k32(lt, p + 4 * kk, desc_advance(ones_desc, kk * 32), kk > 0 || accumulate);
  }
  wgmma_commit();
}

// Key tiles summed by the FP8 wgmma in its own accumulator before that sum is added to the fp32 O:
// 4 tiles = 16 wgmma accumulations, whose truncation (about 14 mantissa bits kept) stays near 1e-3
// relative at worst, against 6% for e4m3 itself, and saves three of every four fp32 adds of O.
inline constexpr int kFoldTiles = 4;

// Exact int32 -> fp32 for |x| < 2^22 (|S| <= 128 * 127 * 127 < 2^21): add the bits of 1.5 * 2^23 and
// subtract it as a float. Two full-rate ALU ops instead of one quarter-rate I2F.
__device__ __forceinline__ float int_to_float(std::int32_t x) {
  return __fsub_rn(__int_as_float(x + 0x4B400000), 12582912.0f);
}

__device__ __forceinline__ std::uint32_t pack_e4m3x4(float a, float b, float c, float d) {
  const std::uint32_t lo = __nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, __NV_E4M3);
  const std::uint32_t hi = __nv_cvt_float2_to_fp8x2(make_float2(c, d), __NV_SATFINITE, __NV_E4M3);
  return lo | (hi << 16);
}

inline constexpr float kLog2PScale = 8.807354922057604f;  // log2(448)

// Scores of a fresh tile and the online-softmax step, in place: si (int32 dot products) in, s out as
// p * 448 = exp2(S - m + log2(448)), ready for e4m3. Per row half r: alpha[r], the new max m[r], and
// l[r] (kept in units of 448: the epilogue divides acc * sv by it, which is step 7's 448 * l).
// S = float(dot) * scale_h, scale_h = sq * sk of key block h (columns 0-63 / 64-127). The row max is
// taken on the integers per key block (the scales are >= 0), so each score costs one conversion, one
// FFMA and one exp2. kMasked (the tile holding the end of the valid keys): columns >= limit get p = 0.
// l is summed by the tensor core from P8 (issue_pv), so no row sums here.
template <bool kMasked>
__device__ __forceinline__ void softmax_tile(std::int32_t* si, float* s, float* m, float* alpha, float scale0,
                                             float scale1, int limit, int lane) {
  if constexpr (kMasked) {
#pragma unroll
    for (int i = 0; i < 64; ++i) {
      const int col = (i / 4) * 8 + (lane % 4) * 2 + (i & 1);
      if (col >= limit) si[i] = INT_MIN;
    }
  }
  int mi[2][2] = {{INT_MIN, INT_MIN}, {INT_MIN, INT_MIN}};  // [row half][key block]
#pragma unroll
  for (int i = 0; i < 64; ++i) mi[(i >> 1) & 1][i / 32] = max(mi[(i >> 1) & 1][i / 32], si[i]);
  float mx[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    // A key block with no valid column (INT_MIN) contributes -inf.
    const float b0 = mi[r][0] == INT_MIN ? -INFINITY : __fmul_rn(int_to_float(mi[r][0]), scale0);
    const float b1 = mi[r][1] == INT_MIN ? -INFINITY : __fmul_rn(int_to_float(mi[r][1]), scale1);
    mx[r] = fmaxf(m[r], fmaxf(b0, b1));
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
    alpha[r] = ex2(m[r] - mx[r]);  // m = -inf on the first tile: alpha = 0
    m[r] = mx[r];
  }
  // p * 448 = exp2(x * scale_h - m + log2(448)) with x read as float(x) + 1.5 * 2^23 (the integer plus
  // the magic number's bits): the magic term is folded into the bias, one IADD and one FFMA per score.
  // The bias's rounding (ulp of 1.5 * 2^23 * scale_h) is a common factor of about 1e-4 relative on the
  // p of one row and key block, far below e4m3's 6%.
  float bias[2][2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    bias[r][0] = kLog2PScale - m[r] - 12582912.0f * scale0;
    bias[r][1] = kLog2PScale - m[r] - 12582912.0f * scale1;
  }
#pragma unroll
  for (int i = 0; i < 64; ++i) {
    const int r = (i >> 1) & 1, h = i / 32;
    float p = ex2(fmaf(__int_as_float(si[i] + 0x4B400000), h == 0 ? scale0 : scale1, bias[r][h]));
    if constexpr (kMasked) p = si[i] == INT_MIN ? 0.f : p;
    s[i] = p;
  }
}

// p * 448 (fp32 accumulator layout) -> e4m3 in the 8-bit register-A layout, k-step by k-step: the
// columns a thread holds line up with the A layout once V's keys are permuted (v_key_position).
__device__ __forceinline__ void pack_p(const float* s, std::uint32_t* pr) {
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
    const float* x = s + 16 * kk;
    pr[4 * kk + 0] = pack_e4m3x4(x[0], x[1], x[4], x[5]);
    pr[4 * kk + 1] = pack_e4m3x4(x[2], x[3], x[6], x[7]);
    pr[4 * kk + 2] = pack_e4m3x4(x[8], x[9], x[12], x[13]);
    pr[4 * kk + 3] = pack_e4m3x4(x[10], x[11], x[14], x[15]);
  }
}

// One tile's softmax step, masked only where the valid keys end inside it.
__device__ __forceinline__ void softmax_step(std::int32_t* si, float* s, float* m, float* alpha, const float* sc,
                                             int limit, int lane) {
  if (limit < 128)
    softmax_tile<true>(si, s, m, alpha, sc[0], sc[1], limit, lane);
  else
    softmax_tile<false>(si, s, m, alpha, sc[0], sc[1], limit, lane);
}

// Runs the key tiles of one work tile for consumer warpgroup `cw`. On return `o` holds acc (step 6) and
// `l` the sums of P8 of this thread's two rows (whole rows); Q has been released.
//
// Two accumulators: `ot`, the FP8 tensor core's sum over up to kFoldTiles tiles, and `o` in fp32, kept
// lazily as acc = o * c + ot with a per-row factor c. A grown row max multiplies c and ot by alpha (o is
// left alone); the fold o = o * c + ot is one FFMA per element. This halves the rescale work of a
// naive "multiply both by alpha", which ran on about half of all tiles. l is kept the same way: lt (the
// FP8 row sums) beside ot and l beside o.
template <int kHeadDim, bool kPingPong>
__device__ __forceinline__ void consumer_mainloop(const SageHopperParams& p, const SageSmem<kHeadDim>& sm, int cw,
                                                  int n_tiles, int kv_len, int ring, float q_scale,
                                                  const float* k_scale, float* o, float* l) {
  using Cfg = SageConfig<kHeadDim>;
  using Slot = RingSlot<Cfg::kStages>;
  constexpr int kAcc = Cfg::kAcc;
  const int lane = threadIdx.x % 32;
  std::int32_t si[64];
  float s[64], ot[kAcc], lt[4] = {0.f, 0.f, 0.f, 0.f};
  std::uint32_t pr[16];
#pragma unroll
  for (int i = 0; i < kAcc; ++i) o[i] = ot[i] = 0.f;
  float m[2] = {-INFINITY, -INFINITY}, alpha[2], c[2] = {1.f, 1.f};
  l[0] = l[1] = 0.f;
  const std::uint64_t q_desc = make_desc_sw(smem_addr(sm.q()) + cw * 64 * kHeadDim, Cfg::kQkAtom, Cfg::kQkSwizzle);
  const std::uint64_t k_desc0 = make_desc_sw(smem_addr(sm.k(0)), Cfg::kQkAtom, Cfg::kQkSwizzle);
  const std::uint64_t v_desc0 = make_desc_sw(smem_addr(sm.v(0)), 1024, 1);
  const std::uint64_t ones_desc = make_desc_sw(smem_addr(sm.ones()), 1024, 1);
  const auto k_desc = [&](int stage) { return desc_advance(k_desc0, stage * Cfg::kTileBytes); };
  const auto v_desc = [&](int stage) { return desc_advance(v_desc0, stage * Cfg::kTileBytes); };
  const int last_limit = kv_len - (n_tiles - 1) * Cfg::kBlockN;
  const auto sched_wait = [&] {
    if constexpr (kPingPong) named_sync(1 + cw, 256);
  };
  const auto sched_signal = [&] {
    if constexpr (kPingPong) named_arrive(1 + (cw ^ 1), 256);
  };
  const auto release_q = [&](int j) {
    if (j == n_tiles - 1 && lane == 0) mbar_arrive(sm.q_empty());
  };
  // The k block scales of tile j, loaded one tile ahead so that no global load sits on the softmax's path.
  const auto load_k_scales = [&](int j, float* ks) {
    const int jj = min(j, n_tiles - 1);
    ks[0] = __ldg(k_scale + 2 * jj);
    ks[1] = __ldg(k_scale + 2 * jj + 1);
  };
  const auto tile_scales = [&](const float* ks, float* sc) {
    sc[0] = __fmul_rn(q_scale, ks[0]);
    sc[1] = __fmul_rn(q_scale, ks[1]);
  };

  float ks_next[2];
  {
    float ks[2], sc[2];
    load_k_scales(0, ks);
    load_k_scales(1, ks_next);
    tile_scales(ks, sc);
    const Slot k0(ring);
    mbar_wait(sm.k_full(k0.stage), k0.phase);
    sched_wait();
    issue_qk<kHeadDim>(si, q_desc, k_desc(k0.stage));
    sched_signal();
    wgmma_wait<0>();
    fence_regs(reinterpret_cast<std::uint32_t*>(si), 64);
    if (lane == 0) mbar_arrive(sm.k_empty(k0.stage));
    release_q(0);
    softmax_step(si, s, m, alpha, sc, n_tiles == 1 ? last_limit : 128, lane);
    pack_p(s, pr);
  }

  // ot holds the P.V sums of `pending` tiles (the same count in every warp, so the wgmma's
  // accumulate flag is uniform); acc = o * c + ot, relative to the current row max.
  int pending = 0;
  for (int j = 1; j < n_tiles; ++j) {
    float sc[2];
    tile_scales(ks_next, sc);
    load_k_scales(j + 1, ks_next);
    const Slot cur(ring + j), prev(ring + j - 1);
    mbar_wait(sm.k_full(cur.stage), cur.phase);
    mbar_wait(sm.v_full(prev.stage), prev.phase);
    sched_wait();
    issue_qk<kHeadDim>(si, q_desc, k_desc(cur.stage));
    issue_pv<kHeadDim>(ot, lt, pr, v_desc(prev.stage), ones_desc, pending > 0);
    sched_signal();
    ++pending;
    wgmma_wait<1>();  // S done (P V of tile j - 1 may still run)
    fence_regs(reinterpret_cast<std::uint32_t*>(si), 64);
    if (lane == 0) mbar_arrive(sm.k_empty(cur.stage));
    release_q(j);
    softmax_step(si, s, m, alpha, sc, j == n_tiles - 1 ? last_limit : 128, lane);
    wgmma_wait<0>();
    fence_regs(ot, kAcc);
    fence_regs(lt, 4);
    fence_regs(pr, 16);
    if (lane == 0) mbar_arrive(sm.v_empty(prev.stage));
    if (pending == kFoldTiles) {
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
      // A grown row max rescales the FP8 sum (alpha is exactly 1 for the rows that did not grow).
      if (__any_sync(0xffffffffu, alpha[0] != 1.f || alpha[1] != 1.f)) {
#pragma unroll
        for (int i = 0; i < kAcc; ++i) ot[i] *= alpha[(i >> 1) & 1];
#pragma unroll
        for (int i = 0; i < 4; ++i) lt[i] *= alpha[(i >> 1) & 1];
      }
    }
    pack_p(s, pr);
  }
  {
    const Slot last(ring + n_tiles - 1);
    mbar_wait(sm.v_full(last.stage), last.phase);
    sched_wait();
    issue_pv<kHeadDim>(ot, lt, pr, v_desc(last.stage), ones_desc, pending > 0);
    sched_signal();
    wgmma_wait<0>();
    fence_regs(ot, kAcc);
    fence_regs(lt, 4);
    if (lane == 0) mbar_arrive(sm.v_empty(last.stage));
#pragma unroll
    for (int i = 0; i < kAcc; ++i) o[i] = fmaf(o[i], c[(i >> 1) & 1], ot[i]);
    l[0] = fmaf(l[0], c[0], lt[0]);
    l[1] = fmaf(l[1], c[1], lt[2]);
  }
}

}  // namespace dattn::sage::hopper
