#pragma once
// Parameters, tile configuration, shared-memory layout and tile scheduling of the Hopper FLASH_ATTN
// kernel (see flash_hopper_kernel.cuh for the overall design).
#include <cuda.h>  // CUtensorMap (types only; the driver entry point is fetched at run time)
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "attention/kernels/sm90/ring_barriers.cuh"

namespace dattn::flash::hopper {

inline constexpr int kInlineLengths = 64;

struct HopperParams {
  CUtensorMap tm_q;  // 4-D {D, Hq, Sq, B}, box {64, 1, 128, 1} (one 64-column slab), 128B swizzle
  CUtensorMap tm_k;  // 4-D {D, Hkv, Sk, B}, same box
  CUtensorMap tm_v;
  CUtensorMap tm_o;                   // 4-D {D, Hq, Sq, B}, box {64, 1, 64, 1}: one warpgroup's rows
  void* out = nullptr;                // [B, Sq, Hq, D]
  const int* key_lengths = nullptr;   // lengths_mode 2 (device memory)
  int inline_lengths[kInlineLengths];  // lengths_mode 1
  int lengths_mode = 0;               // 0: all keys valid
  int seq_q = 0, seq_k = 0, heads_q = 0, group = 1, batch = 1;
  int m_blocks = 0;     // ceil(Sq / kBlockM)
  int total_tiles = 0;  // m_blocks * heads_q * batch
  float scale_log2 = 0;  // softmax scale * log2(e), > 0
  float rescale_threshold = 8.f;  // log2 units; see softmax_tile
  // Block-sparse (SPARSE_BLOCK; unused by the dense kernel): work tile row r = (b * heads_q + hq) *
  // m_blocks + m_block visits tile_counts[r] key tiles, tile_entries[r * tile_stride ...] in ascending
  // order, each entry a KeyTileEntry.
  const int* tile_entries = nullptr;
  const int* tile_counts = nullptr;
  int tile_stride = 0;
};

// Which key tiles a work tile visits: all (dense), the listed ones (SPARSE_BLOCK, 128-row blocks), or
// the listed ones with per-warpgroup hidden 64-key halves (64-row blocks; the -inf guards of rows that
// saw no key yet are compiled in only here: with whole tiles every row sees a valid key first).
// DenseCausal (Sq == Sk): the dense walk cut after the work tile's last row, with the diagonal masked
// per row; a row always sees key 0 of its first tile and its own key in the diagonal one, so the whole-
// tile reasoning holds (no -inf guards).
enum class KeyWalk { Dense, Listed, ListedHalves, DenseCausal };
// Whether the walk follows a sparse list (HopperParams::tile_entries) rather than tiles 0, 1, ...
__host__ __device__ constexpr bool listed_walk(KeyWalk w) { return w == KeyWalk::Listed || w == KeyWalk::ListedHalves; }

// One entry of a sparse work tile's key-tile list: the 128-key tile index in the low 24 bits, and in
// bits 24..27 the 64-key halves hidden from consumer warpgroup 0 (bits 24, 25: low and high half) and
// warpgroup 1 (bits 26, 27). Halves are hidden only with 64-row blocks, where each warpgroup's 64 rows
// are one query block with its own kept key blocks; 0 hides nothing (128-row blocks).
struct KeyTileEntry {
  static constexpr int kTileBits = 24, kTileMask = (1 << kTileBits) - 1;
  __host__ __device__ static constexpr int make(int tile, int hidden) { return tile | (hidden << kTileBits); }
  __device__ static int tile(int e) { return e & kTileMask; }
  __device__ static int hidden(int e, int cw) { return (e >> (kTileBits + 2 * cw)) & 3; }
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
  // Q, K[kStages], V[kStages], O staging, then the barriers.
  static constexpr int kBarrierOffset = kTileBytes * (2 + 2 * kStages);
  static constexpr int kSmemBytes = kBarrierOffset + 256 + 1024;  // + barriers + alignment slack
  static constexpr int kProducerRegs = 24, kConsumerRegs = 240;
};

template <int kHeadDim>
struct SmemView : RingBarriers<HopperConfig<kHeadDim>::kBarrierOffset> {
  using Cfg = HopperConfig<kHeadDim>;
  using RingBarriers<Cfg::kBarrierOffset>::base;
  __device__ std::uint8_t* q() const { return base; }
  __device__ std::uint8_t* k(int s) const { return base + Cfg::kTileBytes * (1 + s); }
  __device__ std::uint8_t* v(int s) const { return base + Cfg::kTileBytes * (1 + Cfg::kStages + s); }
  __device__ std::uint8_t* o() const { return base + Cfg::kTileBytes * (1 + 2 * Cfg::kStages); }
};

// A pipeline position: ring stage and the mbarrier phase parity of the n-th use of the ring.
template <int kStages>
struct RingSlot {
  int stage, phase;
  __device__ explicit RingSlot(int n) : stage(n % kStages), phase((n / kStages) & 1) {}
};

// One work tile: 128 query rows of one (batch, head). Tiles are numbered with the query block
// fastest, so the CTAs running at the same time share a head and its K/V stay in L2.
struct TileCoord {
  int m_block, hq, b;
  __device__ TileCoord(int tile, int m_blocks, int heads_q)
      : m_block(tile % m_blocks), hq((tile / m_blocks) % heads_q), b(tile / (m_blocks * heads_q)) {}
};

__device__ __forceinline__ int valid_keys(const HopperParams& p, int b) {
  int n = p.seq_k;
  if (p.lengths_mode == 1) n = min(n, p.inline_lengths[b]);
  if (p.lengths_mode == 2) n = min(n, p.key_lengths[b]);
  return max(n, 0);
}

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

}  // namespace dattn::flash::hopper
