#pragma once
// The Hopper (sm_90a) FLASH_ATTN forward kernel, FlashAttention-3 style and persistent: each CTA
// loops over work tiles (128 query rows of one batch item and head) tile = blockIdx.x + i*gridDim.x.
// Warpgroup 0 is the producer: one thread issues TMA loads of Q (once per work tile, as soon as the
// previous tile released it) and of K/V tiles into a kStages-deep shared-memory ring guarded by
// full/empty mbarriers; the ring runs on across work tiles, so the next tile's loads overlap the
// current tile's last GEMMs and its epilogue. Warpgroups 1 and 2 are consumers, 64 query rows each
// (mainloop: flash_hopper_mainloop.cuh; TMA-store epilogue: flash_hopper_epilogue.cuh).
// Head dim 128 or 64 (shared-memory rows are split into 64-column = 128-byte slabs, one 128B swizzle
// atom row each), any Sq/Sk (TMA zero-fills rows past the end on load and clips them on store; keys
// past the valid length are masked), grouped-query attention, key padding by per-batch lengths; batch
// items without a valid key get zeros. Launched with one CTA per work tile, the same kernel is the
// classic non-persistent grid (HopperTuning::persistent_grid = false, for comparison).
// kWalk DenseCausal: the dense walk for causal attention (flash_hopper_config.cuh).
// kWalk Listed / ListedHalves (SPARSE_BLOCK): each work tile visits only the key tiles of its list (HopperParams::
// tile_entries, ascending), with per-warpgroup hidden 64-key halves for 64-row blocks; with every tile
// listed it runs the dense kernel's exact sequence of operations.
// Built for every architecture; the body is empty except on sm_90a.
#include <cstdint>

#include "attention/kernels/sm90/flash_hopper_config.cuh"
#include "attention/kernels/sm90/flash_hopper_epilogue.cuh"
#include "attention/kernels/flash/hopper/flash_hopper_mainloop.cuh"
#include "attention/kernels/sm90/sm90_sync.cuh"
#include "core/cuda/dependent_launch.cuh"

namespace dattn::flash::hopper {

// The key tiles a work tile visits: dense, tiles 0 .. n-1 of its valid keys; sparse, the listed ones.
struct TileKeys {
  const int* entries;  // sparse: the work tile's KeyTileEntry list; dense: nullptr
  int count;
};

// Work tile `tile_id` (producer and consumers map it alike). Causal: query blocks in descending order, so
// that the longest tiles (the last query blocks see the most keys) start first and the grid's last wave
// holds the shortest (FlashAttention-3 orders causal work the same way).
template <KeyWalk kWalk>
__device__ __forceinline__ TileCoord work_tile(const HopperParams& p, int tile_id) {
  TileCoord tile(tile_id, p.m_blocks, p.heads_q);
  if constexpr (kWalk == KeyWalk::DenseCausal) tile.m_block = p.m_blocks - 1 - tile.m_block;
  return tile;
}

template <KeyWalk kWalk, int kBlockN>
__device__ __forceinline__ TileKeys tile_keys(const HopperParams& p, const TileCoord& tile, int kv_len) {
  if constexpr (listed_walk(kWalk)) {
    const int row = (tile.b * p.heads_q + tile.hq) * p.m_blocks + tile.m_block;
    return {p.tile_entries + static_cast<std::int64_t>(row) * p.tile_stride, kv_len > 0 ? p.tile_counts[row] : 0};
  } else if constexpr (kWalk == KeyWalk::DenseCausal) {
    // Up to the tile holding the work tile's last row (kBlockM = kBlockN: the m_block-th key tile).
    const int last_row = min((tile.m_block + 1) * kBlockN, p.seq_q) - 1;
    return {nullptr, min((kv_len + kBlockN - 1) / kBlockN, last_row / kBlockN + 1)};
  } else {
    return {nullptr, (kv_len + kBlockN - 1) / kBlockN};
  }
}

template <int kHeadDim, KeyWalk kWalk>
__device__ __forceinline__ void producer(const HopperParams& p, const SmemView<kHeadDim>& sm) {
  using Cfg = HopperConfig<kHeadDim>;
  using Slot = RingSlot<Cfg::kStages>;
  tma_prefetch_desc(&p.tm_q);
  tma_prefetch_desc(&p.tm_k);
  tma_prefetch_desc(&p.tm_v);
  int ring = 0, q_uses = 0;
  for (int tile_id = blockIdx.x; tile_id < p.total_tiles; tile_id += gridDim.x) {
    const TileCoord tile = work_tile<kWalk>(p, tile_id);
    const TileKeys keys = tile_keys<kWalk, Cfg::kBlockN>(p, tile, valid_keys(p, tile.b));
    if (keys.count == 0) continue;
    const int hkv = tile.hq / p.group, row0 = tile.m_block * Cfg::kBlockM;
    mbar_wait(sm.q_empty(), (q_uses & 1) ^ 1);  // a fresh barrier passes parity 1
    ++q_uses;
    mbar_arrive_expect_tx(sm.q_full(), Cfg::kTileBytes);
#pragma unroll
    for (int slab = 0; slab < Cfg::kSlabs; ++slab)
      tma_load_4d(sm.q() + slab * Cfg::kHalfBytes, &p.tm_q, sm.q_full(), slab * 64, tile.hq, row0, tile.b);
    for (int j = 0; j < keys.count; ++j, ++ring) {
      const Slot slot(ring);
      const int key0 = (listed_walk(kWalk) ? KeyTileEntry::tile(keys.entries[j]) : j) * Cfg::kBlockN;
      mbar_wait(sm.k_empty(slot.stage), slot.phase ^ 1);
      mbar_arrive_expect_tx(sm.k_full(slot.stage), Cfg::kTileBytes);
#pragma unroll
      for (int slab = 0; slab < Cfg::kSlabs; ++slab)
        tma_load_4d(sm.k(slot.stage) + slab * Cfg::kHalfBytes, &p.tm_k, sm.k_full(slot.stage), slab * 64, hkv, key0,
                    tile.b);
      mbar_wait(sm.v_empty(slot.stage), slot.phase ^ 1);
      mbar_arrive_expect_tx(sm.v_full(slot.stage), Cfg::kTileBytes);
#pragma unroll
      for (int slab = 0; slab < Cfg::kSlabs; ++slab)
        tma_load_4d(sm.v(slot.stage) + slab * Cfg::kHalfBytes, &p.tm_v, sm.v_full(slot.stage), slab * 64, hkv, key0,
                    tile.b);
    }
  }
}

template <int kHeadDim, bool kFp16, bool kPingPong, KeyWalk kWalk>
__device__ __forceinline__ void consumer(const HopperParams& p, const SmemView<kHeadDim>& sm, int cw) {
  using Cfg = HopperConfig<kHeadDim>;
  float o[Cfg::kAcc], l[2];
  int ring = 0, q_uses = 0;
  for (int tile_id = blockIdx.x; tile_id < p.total_tiles; tile_id += gridDim.x) {
    const TileCoord tile = work_tile<kWalk>(p, tile_id);
    const int kv_len = valid_keys(p, tile.b);
    const TileKeys keys = tile_keys<kWalk, Cfg::kBlockN>(p, tile, kv_len);
    if (keys.count == 0) {
      store_zeros<kHeadDim>(p.out, p.seq_q, p.heads_q, cw, tile);
      continue;
    }
    mbar_wait(sm.q_full(), q_uses & 1);
    ++q_uses;
    // The GEMM turn restarts with every work tile here: letting it run on across tiles (as SAGE_ATTN
    // does) measured ~4% slower on flux_joint (bench/notes/attention_kernels.md).
    begin_turns<kPingPong>(cw);
    consumer_mainloop<kHeadDim, kFp16, kPingPong, kWalk>(p, sm, cw, keys.entries, keys.count, kv_len,
                                                         tile.m_block * Cfg::kBlockM, ring, o, l);
    end_turns<kPingPong>(cw);
    ring += keys.count;
    store_output<kHeadDim, kFp16>(&p.tm_o, sm.o(), cw, tile, o, l);
  }
  if (threadIdx.x % 128 == 0) tma_store_wait_read();  // shared memory must outlive the last store
}

template <int kHeadDim, bool kFp16, bool kPingPong, KeyWalk kWalk>
__global__ void __launch_bounds__(HopperConfig<kHeadDim>::kThreads, 1)
    flash_hopper_kernel(const __grid_constant__ HopperParams p) {
#if DATTN_SM90A
  using Cfg = HopperConfig<kHeadDim>;
  extern __shared__ std::uint8_t smem_raw[];
  const SmemView<kHeadDim> sm{{aligned_smem_base(smem_raw)}};
  init_ring_barriers<Cfg::kStages>(sm);
  // A sparse walk is launched dependent on the mask estimator's last kernel: the set-up above overlaps
  // its tail, and nothing in global memory is touched before it has completed. A no-op otherwise.
  cuda::wait_for_prior_grids();
  const int tid = threadIdx.x;
  const int wg = tid / 128;
  if (wg == 0) {
    regs_dealloc<Cfg::kProducerRegs>();
    if (tid == 0) producer<kHeadDim, kWalk>(p, sm);
    return;
  }
  regs_alloc<Cfg::kConsumerRegs>();
  consumer<kHeadDim, kFp16, kPingPong, kWalk>(p, sm, wg - 1);
#endif
}

}  // namespace dattn::flash::hopper
