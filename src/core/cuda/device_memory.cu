#include <cuda_runtime.h>

#include <utility>

#include "core/cuda/check.cuh"
#include "dattn/core/device_memory.h"

namespace dattn {

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes) DATTN_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) cudaFree(ptr_);
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
