#pragma once
// sm_90a building blocks of the Hopper FLASH_ATTN kernel besides wgmma: shared-memory mbarriers
// (transaction-counted, for TMA), TMA tile loads (cp.async.bulk.tensor), register reallocation
// (setmaxnreg), TMA stores. Compiled only for sm_90a (DATTN_SM90A, see wgmma.cuh); empty elsewhere.
#include <cstdint>

#include "attention/kernels/sm90/wgmma.cuh"
#include "core/cuda/cp_async.cuh"

namespace dattn::flash::hopper {

using dattn::cuda::smem_addr;  // a shared-memory pointer as the 32-bit address PTX takes

__device__ __forceinline__ void mbar_init(std::uint64_t* bar, std::uint32_t count) {
#if DATTN_SM90A
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count) : "memory");
#endif
}

// Makes barrier initialisation visible to the async proxy (TMA) before first use.
__device__ __forceinline__ void mbar_init_fence() {
#if DATTN_SM90A
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

// Orders this thread's generic-proxy shared-memory writes before later async-proxy reads (wgmma, TMA).
__device__ __forceinline__ void fence_proxy_async() {
#if DATTN_SM90A
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

// One arrival that also announces `bytes` of TMA transactions for the current phase.
__device__ __forceinline__ void mbar_arrive_expect_tx(std::uint64_t* bar, std::uint32_t bytes) {
#if DATTN_SM90A
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes)
               : "memory");
#endif
}

__device__ __forceinline__ void mbar_arrive(std::uint64_t* bar) {
#if DATTN_SM90A
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(bar)) : "memory");
#endif
}

// Waits until the phase of parity `parity` has completed (a fresh barrier counts parity 1 as done).
// The suspend-time hint (10 ms, the value CUTLASS uses) lets the thread sleep until the phase completes
// instead of returning after the short default limit: without it the producer warp polled ~260 times
// per key tile (ncu, SAGE_ATTN), a fifth of its scheduler's issue slots. Measured kernel times did not
// change either way (FLASH_ATTN and SAGE_ATTN, H200); it stays because polling buys nothing.
__device__ __forceinline__ void mbar_wait(std::uint64_t* bar, std::uint32_t parity) {
#if DATTN_SM90A
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1, %2;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" ::"r"(smem_addr(bar)),
      "r"(parity), "n"(10000000)
      : "memory");
#endif
}

// 4-D TMA tile load global -> shared (coordinates innermost first), completing on `bar`.
__device__ __forceinline__ void tma_load_4d(void* smem_dst, const void* tmap, std::uint64_t* bar, int c0, int c1,
                                            int c2, int c3) {
#if DATTN_SM90A
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6}], [%2];\n" ::"r"(smem_addr(smem_dst)),
      "l"(reinterpret_cast<std::uint64_t>(tmap)), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
#endif
}

// 4-D TMA tile store shared -> global (coordinates innermost first); rows outside the tensor are
// clipped. Completion is tracked per thread with bulk groups (tma_store_commit / tma_store_wait_read).
__device__ __forceinline__ void tma_store_4d(const void* tmap, const void* smem_src, int c0, int c1, int c2, int c3) {
#if DATTN_SM90A
  asm volatile(
      "cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5}], [%1];\n" ::"l"(
          reinterpret_cast<std::uint64_t>(tmap)),
      "r"(smem_addr(smem_src)), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
#endif
}
__device__ __forceinline__ void tma_store_commit() {
#if DATTN_SM90A
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
#endif
}
// Waits until this thread's committed stores have finished reading shared memory.
__device__ __forceinline__ void tma_store_wait_read() {
#if DATTN_SM90A
  asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void tma_prefetch_desc(const void* tmap) {
#if DATTN_SM90A
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<std::uint64_t>(tmap)) : "memory");
#endif
}

template <int kRegs>
__device__ __forceinline__ void regs_dealloc() {
#if DATTN_SM90A
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
#endif
}
template <int kRegs>
__device__ __forceinline__ void regs_alloc() {
#if DATTN_SM90A
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
#endif
}

// Named barrier over `threads` threads (a multiple of 32); id 0 is __syncthreads'.
__device__ __forceinline__ void named_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// The ping-pong GEMM turn of the two consumer warpgroups (named barriers 1 and 2; FLASH_ATTN and
// SAGE_ATTN). begin_turns lets warpgroup 0 go first; end_turns has warpgroup 0 consume warpgroup 1's
// last signal (or the opening one if no turn was taken). Both warpgroups take the same number of
// turns per work tile, so a pair may enclose one work tile (FLASH_ATTN) or all of a CTA's tiles
// (SAGE_ATTN: warpgroup 0 then starts the next tile while warpgroup 1 is still in its epilogue).
template <bool kPingPong>
__device__ __forceinline__ void begin_turns(int cw) {
  if (kPingPong && cw == 1) named_arrive(1, 256);
}

template <bool kPingPong>
__device__ __forceinline__ void end_turns(int cw) {
  if (kPingPong && cw == 0) named_sync(1, 256);
}

}  // namespace dattn::flash::hopper
