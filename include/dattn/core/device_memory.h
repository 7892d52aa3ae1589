#pragma once
// CUDA device memory and timing for host code that must not include CUDA headers (the CLI, tests,
// benchmarks). Every call throws dattn::Error-derived exceptions when this build has no CUDA or the
// runtime fails; messages name the call and the CUDA error. "The current context" below is
// current_context(Device::CUDA) (run_context.h): the one bound to the thread, else device 0's default.
#include <cstddef>
#include <cstdint>
#include <memory>

namespace dattn {

class RunContext;
class MemoryCounter;

// Device memory from the stream-ordered pool of the current context's device, allocated on the
// context's stream and freed on that same stream; counted in that context's and that device's counters
// until freed. The buffer keeps its context alive. Work of another context that uses the buffer must
// be finished (or ordered before the free) by its owner.
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
  // The cudaStream_t it was allocated on (its context's).
  void* stream() const { return stream_; }
  // Copies `n` bytes from the host into the buffer at `offset` (and back) on the current context's
  // stream, and waits for the copy (and for the buffer's own stream first, when that is another).
  void upload(const void* host, std::size_t n, std::size_t offset = 0);
  void download(void* host, std::size_t n, std::size_t offset = 0) const;
  // Queues a memset on the current context's stream (stream-ordered, does not wait).
  void fill(std::uint8_t byte);
  // Waits for the buffer's own stream when it is not the current context's: afterwards, work queued on
  // the current stream sees what the other context wrote. No-op for a buffer of the current context.
  void wait_for_owner() const;
  // Whether the buffer was allocated on the current context's stream (its work is ordered with ours).
  bool on_current_stream() const;

 private:
  void release() noexcept;
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
  void* stream_ = nullptr;
  std::shared_ptr<RunContext> context_;  // whose counters and stream the buffer was counted in
  MemoryCounter* device_counter_ = nullptr;
};

// Bytes of device memory held by DeviceBuffers (and CUDA tensors) on the current context's device, by
// every context on it together: now, and the most at once since the last reset. Per context:
// RunContext::bytes_in_use().
std::size_t device_bytes_in_use();
std::size_t device_bytes_peak();
void reset_device_peak();

// Copies n bytes between any two of host and device memory (unified addressing) on the current
// context's stream, and waits for the copy.
void copy_bytes(void* dst, const void* src, std::size_t n);

// Copies n bytes from device to device memory on the current context's stream without waiting: later
// work on that stream sees the copy.
void copy_device_bytes_async(void* dst, const void* src, std::size_t n);

// Waits for the current context's stream.
void device_synchronize();
// Throws when a kernel launched earlier failed (cudaGetLastError + the current context's stream
// synchronised), naming `what`.
void check_device(const char* what);

// Elapsed GPU time between start() and stop() on a stream, measured with CUDA events (nullptr: the
// current context's stream at construction).
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
  // Used by the CUDA build only (maybe_unused: clang's unused-private-field in CPU builds).
  [[maybe_unused]] void* stream_ = nullptr;
  [[maybe_unused]] void* begin_ = nullptr;
  [[maybe_unused]] void* end_ = nullptr;
};

}  // namespace dattn
