#pragma once
// Asynchronous global-to-shared copies (cp.async, sm_80+): a thread issues many and waits once, so a
// staging loop costs one memory round trip instead of one per load.
#include <cuda_runtime.h>

#include <cstdint>

namespace dattn::cuda {

__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}
// 16-byte async copy (both addresses 16-byte aligned); src_bytes = 0 reads nothing and zero-fills.
__device__ __forceinline__ void cp_async_16(std::uint32_t dst, const void* src, int src_bytes = 16) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
// 4-byte async copy (both addresses 4-byte aligned).
__device__ __forceinline__ void cp_async_4(std::uint32_t dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(src));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

}  // namespace dattn::cuda
