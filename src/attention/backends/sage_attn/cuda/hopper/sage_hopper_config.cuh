#pragma once
// Parameters, tile configuration and shared-memory layout of the Hopper SAGE_ATTN kernel
// (sage_hopper_kernel.cuh). Tiles are 128 query rows x 128 keys as in FLASH_ATTN; the operands are the
// quantized buffers of sage_buffers.h, loaded with TMA: Q8 and K8 rows of D bytes (128B swizzle for
// D = 128, 64B for D = 64), V8^T rows of 128 keys (128B swizzle).
#include <cuda.h>

#include <cstdint>

#include "attention/kernels/sm90/flash_hopper_config.cuh"

namespace dattn::sage::hopper {

struct SageHopperParams {
  CUtensorMap tm_q;  // q8 as {D, Sq_pad, B * Hq, 1}, box {D, 128, 1, 1}
  CUtensorMap tm_k;  // k8 as {D, Sk_pad, B * Hkv, 1}, same box
  CUtensorMap tm_v;  // v8t as {Sk_pad, D, B * Hkv, 1}, box {128, D, 1, 1}
  CUtensorMap tm_o;  // out [B, Sq, Hq, D] 16-bit, box {64, 1, 64, 1} (the FLASH_ATTN epilogue's map)
  void* out = nullptr;
  const float* q_scale = nullptr;  // [B * Hq][Sq_pad / 16]
  const float* k_scale = nullptr;  // [B * Hkv][Sk_pad / 64]
  const float* v_scale = nullptr;  // [B * Hkv][D]
  const int* kv_len = nullptr;     // [B]
  int seq_q = 0, seq_q_pad = 0, seq_k_pad = 0, heads_q = 0, heads_kv = 0, group = 1;
  int m_blocks = 0, total_tiles = 0;
};

// kStages = 4: 8-bit tiles are 16 KB, so a deeper ring costs little (176 KB in all at D = 128). Against 2
// stages, 3 alternating rounds on an H200: wan22_5b_self 2.222-2.237 -> 2.171-2.217 ms, flux_joint
// 0.451-0.458 -> 0.443-0.452, hd64 5.314-5.336 -> 5.294-5.316 (about 1.5%, 0.5% at hd64).
template <int kHeadDim_>
struct SageConfig {
  static_assert(kHeadDim_ == 64 || kHeadDim_ == 128, "the Hopper SAGE kernel supports head dim 64 and 128");
  static constexpr int kHeadDim = kHeadDim_, kBlockM = 128, kBlockN = 128, kStages = 4, kThreads = 384;
  static constexpr int kTileBytes = 128 * kHeadDim;  // one Q8, K8 or V8^T tile (8 bits per element)
  static constexpr int kOBytes = flash::hopper::HopperConfig<kHeadDim>::kTileBytes;  // 16-bit O staging
  static constexpr int kAcc = kHeadDim / 2;  // O accumulators per consumer thread
  // Q8/K8 rows are D bytes: 128B swizzle (mode 1, 1024-byte atoms) for D = 128, 64B (mode 2, 512) for 64.
  static constexpr std::uint32_t kQkSwizzle = kHeadDim == 128 ? 1 : 2;
  static constexpr std::uint32_t kQkAtom = kHeadDim == 128 ? 1024 : 512;
  // One 1024-byte atom of e4m3 ones after the O staging: the B operand of the tensor-core row sums.
  static constexpr int kOnesOffset = kTileBytes * (1 + 2 * kStages) + kOBytes;
  static constexpr int kBarrierOffset = kOnesOffset + 1024;
  static constexpr int kSmemBytes = kBarrierOffset + 256 + 1024;  // + barriers + alignment slack
  static constexpr int kProducerRegs = 24, kConsumerRegs = 240;
};

// Q8, K8[kStages], V8^T[kStages], the 16-bit O staging, the ones atom, then FLASH_ATTN's ring barriers.
template <int kHeadDim>
struct SageSmem : flash::hopper::RingBarriers<SageConfig<kHeadDim>::kBarrierOffset> {
  using Cfg = SageConfig<kHeadDim>;
  using flash::hopper::RingBarriers<Cfg::kBarrierOffset>::base;
  __device__ std::uint8_t* q() const { return base; }
  __device__ std::uint8_t* k(int s) const { return base + Cfg::kTileBytes * (1 + s); }
  __device__ std::uint8_t* v(int s) const { return base + Cfg::kTileBytes * (1 + Cfg::kStages + s); }
  __device__ std::uint8_t* o() const { return base + Cfg::kTileBytes * (1 + 2 * Cfg::kStages); }
  __device__ std::uint8_t* ones() const { return base + Cfg::kOnesOffset; }
};

}  // namespace dattn::sage::hopper
