#include <cuda_runtime.h>

#include "core/cuda/check.cuh"
#include "core/cuda/context_cuda.h"

namespace dattn::cuda {

// Blocking, not cudaStreamNonBlocking: work some code still queues on the legacy default stream stays
// ordered with the context's work.
void* create_stream(int device_index) {
  int previous = 0;
  DATTN_CUDA_CHECK(cudaGetDevice(&previous));
  DATTN_CUDA_CHECK(cudaSetDevice(device_index));
  cudaStream_t s = nullptr;
  const cudaError_t err = cudaStreamCreate(&s);
  cudaSetDevice(previous);
  DATTN_CUDA_CHECK(err);
  return s;
}

void destroy_stream(void* stream) {
  if (!stream) return;
  const auto s = static_cast<cudaStream_t>(stream);
  cudaStreamSynchronize(s);
  cudaStreamDestroy(s);
  cudaGetLastError();  // a failure here (runtime already shut down) must not stick to later calls
}

void synchronize_stream(void* stream) { DATTN_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream))); }

int current_device() {
  int d = 0;
  DATTN_CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

void set_device(int device_index) { DATTN_CUDA_CHECK(cudaSetDevice(device_index)); }

}  // namespace dattn::cuda
