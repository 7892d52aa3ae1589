#pragma once
// CUDA device memory and timing for host code that must not include CUDA headers (the CLI, tests,
// benchmarks). Every call throws dattn::Error-derived exceptions when this build has no CUDA or the
// runtime fails; messages name the call and the CUDA error.
#include <cstddef>
#include <cstdint>

namespace dattn {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }
  // Copies `n` bytes from the host into the buffer at `offset` (and back), synchronously.
  void upload(const void* host, std::size_t n, std::size_t offset = 0);
  void download(void* host, std::size_t n, std::size_t offset = 0) const;
  void fill(std::uint8_t byte);

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// Bytes of device memory held by DeviceBuffers now, and the most held at once since the last reset.
std::size_t device_bytes_in_use();
std::size_t device_bytes_peak();
void reset_device_peak();

// Copies n bytes between any two of host and device memory (unified addressing), synchronously.
void copy_bytes(void* dst, const void* src, std::size_t n);

void device_synchronize();
// Throws when a kernel launched earlier failed (cudaGetLastError + synchronize), naming `what`.
void check_device(const char* what);

// Elapsed GPU time between start() and stop() on a stream, measured with CUDA events.
class GpuTimer {
 public:
  explicit GpuTimer(void* stream = nullptr);
  ~GpuTimer();
  GpuTimer(const GpuTimer&) = delete;
  GpuTimer& operator=(const GpuTimer&) = delete;
  void start();
  void stop();
  float elapsed_ms() const;  // waits for the stop event

 private:
  void* stream_ = nullptr;
  void* begin_ = nullptr;
  void* end_ = nullptr;
};

}  // namespace dattn
