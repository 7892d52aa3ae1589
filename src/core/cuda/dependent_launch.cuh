#pragma once
// Programmatic dependent launch (sm_90+): a kernel launched with launch_dependent() may be scheduled
// while the kernel before it in the stream is still finishing, so its launch latency and prologue
// overlap that kernel's tail. Such a kernel must call wait_for_prior_grids() before it reads anything
// earlier stream work wrote (or writes anything that work reads); the wait returns once the prior grid
// has completed and its memory is visible. Kernels that let their dependents start early call
// allow_dependents() (the dependents still wait for completion; this only lets them be scheduled).
// On older GPUs, and for kernels launched without the attribute, both calls are no-ops.
#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "core/cuda/check.cuh"

namespace dattn::cuda {

__device__ __forceinline__ void wait_for_prior_grids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void allow_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// kernel<<<grid, block, smem, stream>>>(args...) with the programmatic-serialization attribute.
template <typename... Params, typename... Args>
void launch_dependent(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream,
                      Args&&... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attribute;
  config.numAttrs = 1;
  DATTN_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
}

}  // namespace dattn::cuda
