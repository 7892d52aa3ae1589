#pragma once
// The shared-memory pipeline state of the persistent Hopper kernels (FLASH_ATTN and SAGE_ATTN): the
// 1024-byte aligned base of dynamic shared memory (128B-swizzle atoms need it), and the mbarriers of
// the Q and K/V ring: 0 q_full, 1 q_empty; then per stage k_full, k_empty, v_full, v_empty.
#include <cstdint>

#include "attention/kernels/sm90/sm90_sync.cuh"

namespace dattn::flash::hopper {

// `base` is the CTA's aligned shared memory; the barriers live kBarrierOffset bytes into it.
template <int kBarrierOffset>
struct RingBarriers {
  std::uint8_t* base;
  __device__ std::uint64_t* bar(int i) const { return reinterpret_cast<std::uint64_t*>(base + kBarrierOffset) + i; }
  __device__ std::uint64_t* q_full() const { return bar(0); }
  __device__ std::uint64_t* q_empty() const { return bar(1); }
  __device__ std::uint64_t* k_full(int s) const { return bar(2 + 4 * s); }
  __device__ std::uint64_t* k_empty(int s) const { return bar(3 + 4 * s); }
  __device__ std::uint64_t* v_full(int s) const { return bar(4 + 4 * s); }
  __device__ std::uint64_t* v_empty(int s) const { return bar(5 + 4 * s); }
};

__device__ __forceinline__ std::uint8_t* aligned_smem_base(std::uint8_t* smem_raw) {
  return reinterpret_cast<std::uint8_t*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) &
                                         ~static_cast<std::uintptr_t>(1023));
}

// Thread 0 initialises the ring's barriers (full: one producer arrival plus the TMA bytes; empty: one
// arrival per consumer warp, 8), then the whole CTA syncs.
template <int kStages, int kBarrierOffset>
__device__ __forceinline__ void init_ring_barriers(const RingBarriers<kBarrierOffset>& ring) {
  if (threadIdx.x == 0) {
    mbar_init(ring.q_full(), 1);
    mbar_init(ring.q_empty(), 8);
    for (int s = 0; s < kStages; ++s) {
      mbar_init(ring.k_full(s), 1);
      mbar_init(ring.v_full(s), 1);
      mbar_init(ring.k_empty(s), 8);
      mbar_init(ring.v_empty(s), 8);
    }
    mbar_init_fence();
  }
  __syncthreads();
}

}  // namespace dattn::flash::hopper
