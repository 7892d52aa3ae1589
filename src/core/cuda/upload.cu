// upload.h on CUDA: bytes through the context's staging ring, dtype changes by a kernel after the upload.
#include "dattn/core/upload.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/cuda/check.cuh"
#include "core/cuda/dtype_convert.h"
#include "core/cuda/staging_ring.h"
#include "dattn/core/device_memory.h"
#include "dattn/core/parallel_copy.h"
#include "dattn/core/run_context.h"

namespace dattn {

void upload_bytes(void* dst, const void* src, std::size_t n) {
  if (n) cuda::staging_ring().copy(dst, src, n);
}

void upload_file_bytes(void* dst, int fd, std::uint64_t offset, std::size_t n, const char* what) {
  if (n)
    cuda::staging_ring().copy_with(dst, n, [&](char* stage, std::size_t at, std::size_t bytes) {
      parallel_read(stage, fd, offset + at, bytes, what);
    });
}

void download_bytes(void* dst, const void* src, std::size_t n) {
  if (n) cuda::staging_ring().download(dst, src, n);
}

bool converts_on_device(DType from, DType to) { return cuda::converts(from, to); }

namespace {

// `stored` (uploaded, in its own dtype) as `dtype`: itself, or widened or rounded by a kernel queued after
// its DMA. The bytes cross the bus once, in their own (often narrower) dtype; `stored` is freed
// stream-ordered after the kernel.
Tensor converted_on_device(Tensor stored, DType dtype) {
  if (stored.dtype() == dtype) return stored;
  Tensor out = Tensor::empty(stored.shape(), dtype, Device::CUDA);
  cuda::convert_async(stored.data(), stored.dtype(), out.data(), dtype, static_cast<std::size_t>(stored.numel()),
                      current_context(Device::CUDA).stream());
  cuda::staging_ring().count_conversion();
  return out;
}

}  // namespace

Tensor upload_tensor(const Tensor& host, DType dtype) {
  if (host.device() != Device::CPU)
    throw std::logic_error("upload_tensor: " + host.describe() + " is not a host tensor");
  if (host.dtype() != dtype && !converts_on_device(host.dtype(), dtype)) {
    const Tensor converted = host.to(dtype);  // F64 and the like: the host's conversion, then its bytes
    return upload_tensor(converted, dtype);
  }
  Tensor stored = Tensor::empty(host.shape(), host.dtype(), Device::CUDA);
  upload_bytes(stored.data(), host.data(), host.bytes());
  return converted_on_device(std::move(stored), dtype);
}

Tensor upload_tensor_from_file(int fd, std::uint64_t offset, const Shape& shape, DType stored, DType dtype,
                               const char* what) {
  if (stored != dtype && !converts_on_device(stored, dtype))
    throw std::logic_error("upload_tensor_from_file: " + std::string(dtype_name(stored)) + " -> " +
                           std::string(dtype_name(dtype)) + " is not converted on the GPU");
  Tensor bytes = Tensor::empty(shape, stored, Device::CUDA);
  upload_file_bytes(bytes.data(), fd, offset, bytes.bytes(), what);
  return converted_on_device(std::move(bytes), dtype);
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
