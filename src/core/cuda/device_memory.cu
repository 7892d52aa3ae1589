#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/cuda/check.cuh"
#include "dattn/core/device_memory.h"
#include "dattn/core/error.h"
#include "dattn/core/human_bytes.h"
#include "dattn/core/run_context.h"

namespace dattn {

namespace {

cudaStream_t current_stream() { return static_cast<cudaStream_t>(current_context(Device::CUDA).stream()); }

// Device memory comes from the stream-ordered pool of the context's device: a model allocates and
// frees intermediates in every layer, and cudaFree would synchronise the device each time. The pool
// keeps freed memory for reuse instead of returning it to the driver (set once per device).
void keep_pool_memory(int device) {
  static std::array<std::once_flag, 64> once;
  if (device < 0 || device >= static_cast<int>(once.size())) return;  // RunContext refuses such indices
  std::call_once(once[static_cast<std::size_t>(device)], [device] {
    cudaMemPool_t pool;
    if (cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess) {
      std::uint64_t keep = UINT64_MAX;
      cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
    }
  });
}

}  // namespace

std::size_t device_bytes_in_use() { return device_memory_counter(current_context(Device::CUDA).device_index()).in_use(); }
std::size_t device_bytes_peak() { return device_memory_counter(current_context(Device::CUDA).device_index()).peak(); }
void reset_device_peak() { device_memory_counter(current_context(Device::CUDA).device_index()).reset_peak(); }

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  if (!bytes) return;
  RunContext& context = current_context(Device::CUDA);
  keep_pool_memory(context.device_index());
  stream_ = context.stream();
  if (const cudaError_t err = cudaMallocAsync(&ptr_, bytes, static_cast<cudaStream_t>(stream_)); err != cudaSuccess) {
    cudaGetLastError();
    ptr_ = nullptr;
    // Out of memory is the request's size, not dattn's failure: say how much was asked and what is free.
    if (err == cudaErrorMemoryAllocation) {
      std::size_t free = 0, total = 0;
      cudaMemGetInfo(&free, &total);
      throw UserError("out of device memory on cuda:" + std::to_string(context.device_index()) + ": " +
                      human_bytes(static_cast<std::int64_t>(bytes)) + " requested, " +
                      human_bytes(static_cast<std::int64_t>(free)) + " free of " +
                      human_bytes(static_cast<std::int64_t>(total)) + "; try a smaller size or fewer frames");
    }
    throw std::runtime_error(std::string("cudaMallocAsync of ") + std::to_string(bytes) + " bytes failed: " +
                             cudaGetErrorString(err));
  }
  context_ = context.shared_from_this();
  device_counter_ = &device_memory_counter(context.device_index());
  context_->memory().add(bytes);
  device_counter_->add(bytes);
  if (context.poison_new_memory())
    DATTN_CUDA_CHECK(cudaMemsetAsync(ptr_, 0xFF, bytes, static_cast<cudaStream_t>(stream_)));
}

void DeviceBuffer::release() noexcept {
  if (!ptr_) return;
  cudaFreeAsync(ptr_, static_cast<cudaStream_t>(stream_));
  context_->memory().sub(bytes_);
  device_counter_->sub(bytes_);
  ptr_ = nullptr;
  context_.reset();
}

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : ptr_(std::exchange(o.ptr_, nullptr)),
      bytes_(std::exchange(o.bytes_, 0)),
      stream_(std::exchange(o.stream_, nullptr)),
      context_(std::move(o.context_)),
      device_counter_(std::exchange(o.device_counter_, nullptr)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    release();
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    stream_ = std::exchange(o.stream_, nullptr);
    context_ = std::move(o.context_);
    device_counter_ = std::exchange(o.device_counter_, nullptr);
  }
  return *this;
}

void DeviceBuffer::wait_for_owner() const {
  if (ptr_ && stream_ != current_context(Device::CUDA).stream())
    DATTN_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)));
}

bool DeviceBuffer::on_current_stream() const { return !ptr_ || stream_ == current_context(Device::CUDA).stream(); }

void DeviceBuffer::upload(const void* host, std::size_t n, std::size_t offset) {
  if (offset + n > bytes_)
    throw std::runtime_error("DeviceBuffer::upload of " + std::to_string(n) + " bytes at " + std::to_string(offset) +
                             " past the end of a buffer of " + std::to_string(bytes_));
  if (!n) return;
  wait_for_owner();
  const cudaStream_t s = current_stream();
  DATTN_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(ptr_) + offset, host, n, cudaMemcpyHostToDevice, s));
  DATTN_CUDA_CHECK(cudaStreamSynchronize(s));
}

void DeviceBuffer::download(void* host, std::size_t n, std::size_t offset) const {
  if (offset + n > bytes_)
    throw std::runtime_error("DeviceBuffer::download of " + std::to_string(n) + " bytes at " +
                             std::to_string(offset) + " past the end of a buffer of " + std::to_string(bytes_));
  if (!n) return;
  wait_for_owner();
  const cudaStream_t s = current_stream();
  DATTN_CUDA_CHECK(cudaMemcpyAsync(host, static_cast<const char*>(ptr_) + offset, n, cudaMemcpyDeviceToHost, s));
  DATTN_CUDA_CHECK(cudaStreamSynchronize(s));
}

void DeviceBuffer::fill(std::uint8_t byte) {
  if (!bytes_) return;
  wait_for_owner();
  DATTN_CUDA_CHECK(cudaMemsetAsync(ptr_, byte, bytes_, current_stream()));
}

void copy_bytes(void* dst, const void* src, std::size_t n) {
  if (!n) return;
  const cudaStream_t s = current_stream();
  DATTN_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, s));
  DATTN_CUDA_CHECK(cudaStreamSynchronize(s));
}

void copy_device_bytes_async(void* dst, const void* src, std::size_t n) {
  if (n) DATTN_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, current_stream()));
}

void device_synchronize() { current_context(Device::CUDA).synchronize(); }

void check_device(const char* what) {
  cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess) err = cudaStreamSynchronize(current_stream());
  if (err != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(err));
}

GpuTimer::GpuTimer(void* stream) : stream_(stream ? stream : current_context(Device::CUDA).stream()) {
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
