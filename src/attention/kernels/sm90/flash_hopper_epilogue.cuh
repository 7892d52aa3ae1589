#pragma once
// The epilogue of the Hopper FLASH_ATTN kernel: each consumer warpgroup normalises its 64 x D output
// rows, converts them to 16 bits into its half of the O staging buffer (128B-swizzled, the layout TMA
// expects) and one thread stores them with TMA (rows past Sq are clipped by the hardware). The store
// runs asynchronously while the warpgroup starts its next work tile; the staging buffer is reused only
// after the previous store has finished reading it.
#include <cstdint>

#include "attention/kernels/sm90/flash_hopper_config.cuh"
#include "attention/kernels/sm90/sm90_sync.cuh"

namespace dattn::flash::hopper {

// Named barriers 3 and 4 sync one consumer warpgroup (128 threads) around its staging buffer. `o_stage`
// is the CTA's O staging area (128 rows x kHeadDim x 2 bytes in 64-column slabs), `tm_o` the output map
// {D, Hq, Sq, B} with 64-row boxes. Shared with the SAGE_ATTN kernel, which has the same output.
// `l` holds this thread's partial sums of its two rows (summed over the row's 4 threads here), or with
// kRowTotal the whole rows' sums.
template <int kHeadDim, bool kFp16, bool kRowTotal = false>
__device__ __forceinline__ void store_output(const CUtensorMap* tm_o, std::uint8_t* o_stage, int cw,
                                             const TileCoord& tile, const float* o, const float* l) {
  using Cfg = HopperConfig<kHeadDim>;
  const int t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
  float inv[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float v = l[r];
    if constexpr (!kRowTotal) {
      v += __shfl_xor_sync(0xffffffffu, v, 1);
      v += __shfl_xor_sync(0xffffffffu, v, 2);
    }
    inv[r] = v == 0.f ? 0.f : 1.f / v;  // 0 only without a valid key; a NaN sum (a NaN score) stays NaN
  }
  // The previous tile's store must have read the staging buffer before it is overwritten.
  if (t == 0) tma_store_wait_read();
  named_sync(3 + cw, 128);
  // 16-byte chunks XOR-swizzled by row (the 128B swizzle pattern): conflict-free fragment writes.
  std::uint8_t* stage = o_stage + cw * 64 * 128;
  const auto chunk_addr = [&](int r, int c) {  // r: row within this warpgroup, c: 16-byte chunk
    return stage + (c / 8) * Cfg::kHalfBytes + r * 128 + (((c & 7) ^ (r & 7)) * 16);
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
  fence_proxy_async();  // generic-proxy writes before the TMA (async proxy) reads them
  named_sync(3 + cw, 128);
  if (t == 0) {
    const int row0 = tile.m_block * Cfg::kBlockM + cw * 64;
#pragma unroll
    for (int slab = 0; slab < Cfg::kSlabs; ++slab)
      tma_store_4d(tm_o, stage + slab * Cfg::kHalfBytes, slab * 64, tile.hq, row0, tile.b);
    tma_store_commit();
  }
}

// A work tile whose batch item has no valid key: this warpgroup's 64 rows are zeros.
template <int kHeadDim>
__device__ __forceinline__ void store_zeros(void* out, int seq_q, int heads_q, int cw, const TileCoord& tile) {
  using Cfg = HopperConfig<kHeadDim>;
  const int t = threadIdx.x % 128;
  const int row0 = tile.m_block * Cfg::kBlockM + cw * 64;
  const int rows = min(64, seq_q - row0);
  for (int idx = t; idx < rows * Cfg::kChunks; idx += 128) {
    const int row = row0 + idx / Cfg::kChunks;
    const std::int64_t off =
        ((static_cast<std::int64_t>(tile.b) * seq_q + row) * heads_q + tile.hq) * Cfg::kHeadDim;
    reinterpret_cast<uint4*>(static_cast<std::uint16_t*>(out) + off)[idx % Cfg::kChunks] = make_uint4(0, 0, 0, 0);
  }
}

}  // namespace dattn::flash::hopper
