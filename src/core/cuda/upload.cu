// upload.h on CUDA: bytes through the context's staging ring, dtype changes by a kernel after the upload.
#include "dattn/core/upload.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "core/cuda/check.cuh"
#include "core/cuda/dtype_convert.h"
#include "core/cuda/staging_ring.h"
#include "dattn/core/device_memory.h"
#include "dattn/core/run_context.h"

namespace dattn {

void upload_bytes(void* dst, const void* src, std::size_t n) {
  if (n) cuda::staging_ring().copy(dst, src, n);
}

void download_bytes(void* dst, const void* src, std::size_t n) {
  if (n) cuda::staging_ring().download(dst, src, n);
}

bool converts_on_device(DType from, DType to) { return cuda::converts(from, to); }

Tensor upload_tensor(const Tensor& host, DType dtype) {
  if (host.device() != Device::CPU)
    throw std::logic_error("upload_tensor: " + host.describe() + " is not a host tensor");
  if (host.dtype() != dtype && !converts_on_device(host.dtype(), dtype)) {
    const Tensor converted = host.to(dtype);  // F64 and the like: the host's conversion, then its bytes
    return upload_tensor(converted, dtype);
  }
  Tensor stored = Tensor::empty(host.shape(), host.dtype(), Device::CUDA);
  upload_bytes(stored.data(), host.data(), host.bytes());
  if (host.dtype() == dtype) return stored;
  // The stored bytes cross the bus once, in their own (often narrower) dtype; the kernel queued after
  // their DMA widens or rounds them on the GPU. `stored` is freed stream-ordered after the kernel.
  Tensor out = Tensor::empty(host.shape(), dtype, Device::CUDA);
  cuda::convert_async(stored.data(), host.dtype(), out.data(), dtype, static_cast<std::size_t>(host.numel()),
                      current_context(Device::CUDA).stream());
  cuda::staging_ring().count_conversion();
  return out;
}

UploadStats upload_stats() {
  const cuda::StagingRing* ring = cuda::find_staging_ring();
  return ring ? ring->stats() : UploadStats{};
}

double pinned_upload_bandwidth(std::size_t bytes, int rounds) {
  const auto s = static_cast<cudaStream_t>(current_context(Device::CUDA).stream());
  void* host = nullptr;
  DATTN_CUDA_CHECK(cudaHostAlloc(&host, bytes, cudaHostAllocDefault));
  const std::unique_ptr<void, void (*)(void*)> free_host(host, [](void* p) { cudaFreeHost(p); });
  std::memset(host, 1, bytes);  // touched: no first-use cost inside the copy
  const DeviceBuffer device(bytes);
  double best = 0;
  for (int r = 0; r < std::max(1, rounds); ++r) {
    DATTN_CUDA_CHECK(cudaStreamSynchronize(s));
    const auto t0 = std::chrono::steady_clock::now();
    DATTN_CUDA_CHECK(cudaMemcpyAsync(device.get(), host, bytes, cudaMemcpyHostToDevice, s));
    DATTN_CUDA_CHECK(cudaStreamSynchronize(s));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, static_cast<double>(bytes) / seconds);
  }
  return best;
}

}  // namespace dattn
