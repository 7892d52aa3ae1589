#pragma once
// A run context: where one stream of work runs. On CUDA it owns the device index, a CUDA stream, the
// library state made on first use (cuBLASLt handle and workspace, cuDNN handle, cached tables, timing
// events) and counters of the device memory its tensors hold; on the CPU it is a placeholder with the
// same interface. A pipeline owns one context and binds it to the calling thread while it runs a request
// (ContextScope); ops and kernels take their stream, handles and memory accounting from the context
// bound to the thread, and kernel launches take the stream explicitly. Two pipelines on two GPUs in one
// process, or a server thread owning its context, each bind their own. Code that binds none runs on the
// process default context of device 0.
#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>

#include "dattn/core/device.h"

namespace dattn {

// Bytes now and the most at once since the last reset; updated lock-free from any thread.
class MemoryCounter {
 public:
  void add(std::size_t bytes);
  void sub(std::size_t bytes);
  std::size_t in_use() const;
  std::size_t peak() const;
  void reset_peak();

 private:
  std::atomic<std::size_t> in_use_{0}, peak_{0};
};

class RunContext : public std::enable_shared_from_this<RunContext> {
 public:
  // A CPU context (device_index 0), or a CUDA context on device `device_index` with a blocking stream
  // of its own. Throws UserError when the build has no CUDA or the index is not a visible device.
  static std::shared_ptr<RunContext> create(Device device, int device_index = 0);
  ~RunContext();
  RunContext(const RunContext&) = delete;
  RunContext& operator=(const RunContext&) = delete;

  Device device() const { return device_; }
  int device_index() const { return device_index_; }
  // The cudaStream_t the context's work runs on (nullptr on the CPU).
  void* stream() const { return stream_; }
  // Waits until every piece of work queued on the context's stream has finished (no-op on the CPU).
  void synchronize() const;

  // Device memory held by tensors and DeviceBuffers allocated while this context was bound: now, and
  // the most at once since the last reset_peak(). The device's own totals are in device_memory.h.
  std::size_t bytes_in_use() const { return memory_.in_use(); }
  std::size_t bytes_peak() const { return memory_.peak(); }
  void reset_peak() { memory_.reset_peak(); }
  MemoryCounter& memory() { return memory_; }

  // For tests: while on, every device buffer (and so every tensor) allocated under this context is
  // filled with 0xFF bytes (a NaN in fp32, bf16 and fp16) first, so an element a kernel fails to write
  // shows as NaN in its result instead of passing with stale memory.
  void set_poison_new_memory(bool on) { poison_new_memory_ = on; }
  bool poison_new_memory() const { return poison_new_memory_; }

  // Library state that lives per context, made on first use by the layer that needs it (the cuBLASLt
  // handle, workspace and plan cache of ops/cuda, ...). The slot is keyed by an address the owner
  // picks. Extensions are destroyed with the context, after its stream has drained, before the stream.
  struct Extension {
    virtual ~Extension() = default;
  };
  Extension* extension(const void* key) const;
  // Stores `value` under `key` (replacing an earlier one) and returns it.
  Extension& set_extension(const void* key, std::unique_ptr<Extension> value);
  // The extension of type T under `key`, made by `make()` (a std::unique_ptr<T>) when absent. Thread-safe:
  // concurrent first uses make it once.
  template <class T, class Make>
  T& extension_or(const void* key, Make&& make) {
    const std::lock_guard<std::recursive_mutex> lock(mutex_);
    if (Extension* e = extension(key)) return static_cast<T&>(*e);
    return static_cast<T&>(set_extension(key, make()));
  }

 private:
  RunContext(Device device, int device_index);
  struct Slots;
  Device device_;
  int device_index_;
  void* stream_ = nullptr;
  MemoryCounter memory_;
  std::atomic<bool> poison_new_memory_{false};
  mutable std::recursive_mutex mutex_;  // guards the extension slots
  std::unique_ptr<Slots> slots_;
};

// The context bound to the calling thread for `device`; when none is bound, the process default context
// of `device` (device index 0 for CUDA), created on first use.
RunContext& current_context(Device device);
// The process default context of a device (created on first use, never destroyed: the CUDA runtime may
// be gone when static destructors run). UserError for an index that is not a visible device.
RunContext& default_context(Device device, int device_index = 0);

// Binds a context to the calling thread for a scope (and makes its device current on CUDA); the
// previous binding (and current device) comes back when the scope ends. Scopes nest. A CPU and a CUDA
// context can be bound at once: current_context(Device) picks by device.
class ContextScope {
 public:
  explicit ContextScope(RunContext& context);
  ~ContextScope();
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  Device device_;
  RunContext* previous_ = nullptr;
  [[maybe_unused]] int previous_device_ = -1;  // the CUDA build's: the device to restore
};

// Device memory counters of CUDA device `device_index` (every context on it together).
MemoryCounter& device_memory_counter(int device_index);

}  // namespace dattn
