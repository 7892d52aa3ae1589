#pragma once
// The Hopper (sm_90a) SAGE_ATTN kernel: the FLASH_ATTN kernel's structure (persistent CTAs over work
// tiles of 128 query rows; a producer warp issuing TMA loads into a K/V ring with full/empty mbarriers;
// two consumer warpgroups of 64 rows with ping-pong) on the quantized operands of sage_buffers.h, with
// the 8-bit mainloop of sage_hopper_mainloop.cuh and FLASH_ATTN's TMA-store epilogue. Padded keys and
// rows are zeros in the buffers, so only key padding inside the last tile needs a mask.
#include <cstdint>

#include "attention/kernels/sm90/flash_hopper_epilogue.cuh"
#include "attention/backends/sage_attn/cuda/hopper/sage_hopper_mainloop.cuh"

namespace dattn::sage::hopper {

using flash::hopper::TileCoord;

template <int kHeadDim>
__device__ __forceinline__ void producer(const SageHopperParams& p, const SageSmem<kHeadDim>& sm) {
  using Cfg = SageConfig<kHeadDim>;
  using Slot = RingSlot<Cfg::kStages>;
  using namespace flash::hopper;
  tma_prefetch_desc(&p.tm_q);
  tma_prefetch_desc(&p.tm_k);
  tma_prefetch_desc(&p.tm_v);
  int ring = 0, q_uses = 0;
  for (int tile_id = blockIdx.x; tile_id < p.total_tiles; tile_id += gridDim.x) {
    const TileCoord tile(tile_id, p.m_blocks, p.heads_q);
    const int n_tiles = (p.kv_len[tile.b] + Cfg::kBlockN - 1) / Cfg::kBlockN;
    if (n_tiles == 0) continue;
    const int bh_q = tile.b * p.heads_q + tile.hq, bh_kv = tile.b * p.heads_kv + tile.hq / p.group;
    mbar_wait(sm.q_empty(), (q_uses & 1) ^ 1);  // a fresh barrier passes parity 1
    ++q_uses;
    mbar_arrive_expect_tx(sm.q_full(), Cfg::kTileBytes);
    tma_load_4d(sm.q(), &p.tm_q, sm.q_full(), 0, tile.m_block * Cfg::kBlockM, bh_q, 0);
    for (int j = 0; j < n_tiles; ++j, ++ring) {
      const Slot slot(ring);
      mbar_wait(sm.k_empty(slot.stage), slot.phase ^ 1);
      mbar_arrive_expect_tx(sm.k_full(slot.stage), Cfg::kTileBytes);
      tma_load_4d(sm.k(slot.stage), &p.tm_k, sm.k_full(slot.stage), 0, j * Cfg::kBlockN, bh_kv, 0);
      mbar_wait(sm.v_empty(slot.stage), slot.phase ^ 1);
      mbar_arrive_expect_tx(sm.v_full(slot.stage), Cfg::kTileBytes);
      tma_load_4d(sm.v(slot.stage), &p.tm_v, sm.v_full(slot.stage), j * Cfg::kBlockN, 0, bh_kv, 0);
    }
  }
}

template <int kHeadDim, bool kFp16, bool kPingPong>
__device__ __forceinline__ void consumer(const SageHopperParams& p, const SageSmem<kHeadDim>& sm, int cw) {
  using Cfg = SageConfig<kHeadDim>;
  using namespace flash::hopper;
  const int t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
  float o[Cfg::kAcc], l[2];
  int ring = 0, q_uses = 0;
  begin_turns<kPingPong>(cw);  // the GEMM turn alternates across work tiles
  for (int tile_id = blockIdx.x; tile_id < p.total_tiles; tile_id += gridDim.x) {
    const TileCoord tile(tile_id, p.m_blocks, p.heads_q);
    const int kv_len = p.kv_len[tile.b];
    const int n_tiles = (kv_len + Cfg::kBlockN - 1) / Cfg::kBlockN;
    if (n_tiles == 0) {
      store_zeros<kHeadDim>(p.out, p.seq_q, p.heads_q, cw, tile);
      continue;
    }
    const std::int64_t bh_q = std::int64_t(tile.b) * p.heads_q + tile.hq;
    const std::int64_t bh_kv = std::int64_t(tile.b) * p.heads_kv + tile.hq / p.group;
    // This warp's 16 rows are one Q block.
    const float q_scale = __ldg(p.q_scale + bh_q * (p.seq_q_pad / 16) + tile.m_block * 8 + cw * 4 + warp);
    const float* k_scale = p.k_scale + bh_kv * (p.seq_k_pad / 64);
    mbar_wait(sm.q_full(), q_uses & 1);
    ++q_uses;
    consumer_mainloop<kHeadDim, kPingPong>(p, sm, cw, n_tiles, kv_len, ring, q_scale, k_scale, o, l);
    ring += n_tiles;
    // Step 7: acc * sv[d] / (448 * l); l is kept in units of 448 and the epilogue divides by its row sum.
    const float* v_scale = p.v_scale + bh_kv * kHeadDim;
#pragma unroll
    for (int i = 0; i < Cfg::kAcc; ++i) o[i] *= __ldg(v_scale + (i / 4) * 8 + (lane % 4) * 2 + (i & 1));
    store_output<kHeadDim, kFp16, true>(&p.tm_o, sm.o(), cw, tile, o, l);
  }
  end_turns<kPingPong>(cw);
  if (t == 0) tma_store_wait_read();  // shared memory must outlive the last store
}

template <int kHeadDim, bool kFp16, bool kPingPong>
__global__ void __launch_bounds__(SageConfig<kHeadDim>::kThreads, 1)
    sage_hopper_kernel(const __grid_constant__ SageHopperParams p) {
#if DATTN_SM90A
  using Cfg = SageConfig<kHeadDim>;
  using namespace flash::hopper;
  extern __shared__ std::uint8_t smem_raw[];
  const SageSmem<kHeadDim> sm{{aligned_smem_base(smem_raw)}};
  // The ones atom (e4m3 1.0 = 0x38 in every byte), written before the CTA-wide sync below and made
  // visible to wgmma's async proxy.
  if (threadIdx.x < 256) reinterpret_cast<std::uint32_t*>(sm.ones())[threadIdx.x] = 0x38383838u;
  fence_proxy_async();
  init_ring_barriers<Cfg::kStages>(sm);
  const int tid = threadIdx.x;
  const int wg = tid / 128;
  if (wg == 0) {
    regs_dealloc<Cfg::kProducerRegs>();
    if (tid == 0) producer<kHeadDim>(p, sm);
    return;
  }
  regs_alloc<Cfg::kConsumerRegs>();
  consumer<kHeadDim, kFp16, kPingPong>(p, sm, wg - 1);
#endif
}

}  // namespace dattn::sage::hopper
