#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <utility>

#include "core/cuda/check.cuh"
#include "dattn/core/device_memory.h"

namespace dattn {

namespace {

std::atomic<std::size_t> g_in_use{0}, g_peak{0};

void count_alloc(std::size_t bytes) {
  const std::size_t now = g_in_use += bytes;
  std::size_t peak = g_peak.load();
  while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
  }
}

// Device memory comes from the stream-ordered pool of the default stream: a model allocates and frees
// intermediates in every layer, and cudaFree would synchronise the device each time. The pool keeps
// freed memory for reuse instead of returning it to the driver.
void* pool_alloc(std::size_t bytes) {
  static const bool configured = [] {
    int device = 0;
    cudaMemPool_t pool;
    if (cudaGetDevice(&device) == cudaSuccess && cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess) {
      std::uint64_t keep = UINT64_MAX;
      cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
    }
    return true;
  }();
  (void)configured;
  void* p = nullptr;
  DATTN_CUDA_CHECK(cudaMallocAsync(&p, bytes, nullptr));
  return p;
}

}  // namespace

std::size_t device_bytes_in_use() { return g_in_use.load(); }
std::size_t device_bytes_peak() { return g_peak.load(); }
void reset_device_peak() { g_peak.store(g_in_use.load()); }

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes) {
    ptr_ = pool_alloc(bytes);
    count_alloc(bytes);
  }
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) {
    cudaFreeAsync(ptr_, nullptr);
    g_in_use -= bytes_;
  }
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) {
      cudaFreeAsync(ptr_, nullptr);
      g_in_use -= bytes_;
    }
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::upload(const void* host, std::size_t n, std::size_t offset) {
  if (offset + n > bytes_) throw std::runtime_error("DeviceBuffer::upload past the end of the buffer");
  DATTN_CUDA_CHECK(cudaMemcpy(static_cast<char*>(ptr_) + offset, host, n, cudaMemcpyHostToDevice));
}

void DeviceBuffer::download(void* host, std::size_t n, std::size_t offset) const {
  if (offset + n > bytes_) throw std::runtime_error("DeviceBuffer::download past the end of the buffer");
  DATTN_CUDA_CHECK(cudaMemcpy(host, static_cast<const char*>(ptr_) + offset, n, cudaMemcpyDeviceToHost));
}

void DeviceBuffer::fill(std::uint8_t byte) {
  if (bytes_) DATTN_CUDA_CHECK(cudaMemset(ptr_, byte, bytes_));
}

void copy_bytes(void* dst, const void* src, std::size_t n) {
  if (n) DATTN_CUDA_CHECK(cudaMemcpy(dst, src, n, cudaMemcpyDefault));
}

void device_synchronize() { DATTN_CUDA_CHECK(cudaDeviceSynchronize()); }

void check_device(const char* what) {
  cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess) err = cudaDeviceSynchronize();
  if (err != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(err));
}

GpuTimer::GpuTimer(void* stream) : stream_(stream) {
  cudaEvent_t b, e;
  DATTN_CUDA_CHECK(cudaEventCreate(&b));
  DATTN_CUDA_CHECK(cudaEventCreate(&e));
  begin_ = b;
  end_ = e;
}

GpuTimer::~GpuTimer() {
  cudaEventDestroy(static_cast<cudaEvent_t>(begin_));
  cudaEventDestroy(static_cast<cudaEvent_t>(end_));
}

void GpuTimer::start() {
  DATTN_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(begin_), static_cast<cudaStream_t>(stream_)));
}

void GpuTimer::stop() {
  DATTN_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(end_), static_cast<cudaStream_t>(stream_)));
}

float GpuTimer::elapsed_ms() const {
  DATTN_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(end_)));
  float ms = 0;
  DATTN_CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(begin_), static_cast<cudaEvent_t>(end_)));
  return ms;
}

}  // namespace dattn
