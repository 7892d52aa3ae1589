// RunContext's device-independent part: creation checks, extension slots, the thread binding and the
// process default contexts; the CUDA runtime calls are in core/cuda/context_cuda.cu (CUDA builds).
#include "dattn/core/run_context.h"

#include <array>
#include <atomic>
#include <map>
#include <stdexcept>
#include <string>

#include "dattn/core/error.h"
#ifdef DATTN_WITH_CUDA
#include "core/cuda/context_cuda.h"
#include "core/cuda/device_info.h"
#endif

namespace dattn {
namespace {

// Enough for any host; an index past it is refused by create() before a counter is touched.
constexpr int kMaxDevices = 64;

// One binding per device kind, so that a CPU scope inside a CUDA scope leaves the CUDA binding alone.
thread_local std::array<RunContext*, 2> t_bound{nullptr, nullptr};

std::size_t kind(Device d) { return d == Device::CPU ? 0 : 1; }

void check_index(Device device, int device_index) {
  if (device == Device::CPU) {
    if (device_index != 0)
      throw UserError("RunContext: cpu device index " + std::to_string(device_index) + ", expected 0");
    return;
  }
#ifndef DATTN_WITH_CUDA
  throw UserError("RunContext on cuda: this dattn was built without CUDA (DATTN_CUDA=off or no nvcc)");
#else
  const int n = cuda::device_count();
  if (device_index < 0 || device_index >= n || device_index >= kMaxDevices)
    throw UserError("RunContext: cuda device index " + std::to_string(device_index) +
                    " is not a visible device (" + std::to_string(n) + " visible" +
                    (n == 0 ? ": " + cuda::unavailable_reason() : std::string()) + ")");
#endif
}

}  // namespace

void MemoryCounter::add(std::size_t bytes) {
  const std::size_t now = in_use_ += bytes;
  std::size_t peak = peak_.load();
  while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
  }
}
void MemoryCounter::sub(std::size_t bytes) { in_use_ -= bytes; }
std::size_t MemoryCounter::in_use() const { return in_use_.load(); }
std::size_t MemoryCounter::peak() const { return peak_.load(); }
void MemoryCounter::reset_peak() { peak_.store(in_use_.load()); }

MemoryCounter& device_memory_counter(int device_index) {
  static std::array<MemoryCounter, kMaxDevices> counters;  // plain numbers, no CUDA state
  if (device_index < 0 || device_index >= kMaxDevices)
    throw UserError("device memory counter of cuda device " + std::to_string(device_index) + ": expected 0 to " +
                    std::to_string(kMaxDevices - 1));
  return counters[static_cast<std::size_t>(device_index)];
}

struct RunContext::Slots {
  std::map<const void*, std::unique_ptr<Extension>> map;
};

std::shared_ptr<RunContext> RunContext::create(Device device, int device_index) {
  check_index(device, device_index);
  return std::shared_ptr<RunContext>(new RunContext(device, device_index));
}

RunContext::RunContext(Device device, int device_index)
    : device_(device), device_index_(device_index), slots_(std::make_unique<Slots>()) {
#ifdef DATTN_WITH_CUDA
  if (device == Device::CUDA) stream_ = cuda::create_stream(device_index);
#endif
}

RunContext::~RunContext() {
#ifdef DATTN_WITH_CUDA
  if (stream_) {
    // Library handles may still have work queued on the stream: drain it, drop them, then the stream.
    try {
      cuda::synchronize_stream(stream_);
    } catch (...) {
    }
    slots_.reset();
    cuda::destroy_stream(stream_);
  }
#endif
}

void RunContext::synchronize() const {
#ifdef DATTN_WITH_CUDA
  if (stream_) cuda::synchronize_stream(stream_);
#endif
}

RunContext::Extension* RunContext::extension(const void* key) const {
  const std::lock_guard<std::recursive_mutex> lock(mutex_);
  const auto it = slots_->map.find(key);
  return it == slots_->map.end() ? nullptr : it->second.get();
}

RunContext::Extension& RunContext::set_extension(const void* key, std::unique_ptr<Extension> value) {
  if (!value) throw std::logic_error("RunContext::set_extension: null extension");
  const std::lock_guard<std::recursive_mutex> lock(mutex_);
  auto& slot = slots_->map[key];
  slot = std::move(value);
  return *slot;
}

RunContext& default_context(Device device, int device_index) {
  if (device == Device::CPU ? device_index != 0 : device_index < 0 || device_index >= kMaxDevices)
    check_index(device, device_index);  // throws
  // Never destroyed (see the header). Each is owned by a leaked shared_ptr so that shared_from_this()
  // works for the buffers it allocates; the atomic pointer makes the common path lock-free.
  static std::array<std::atomic<RunContext*>, kMaxDevices + 1> contexts{};
  static std::array<std::shared_ptr<RunContext>*, kMaxDevices + 1> owners{};  // kept reachable: not a leak
  static std::mutex mutex;
  const std::size_t slot = device == Device::CPU ? kMaxDevices : static_cast<std::size_t>(device_index);
  if (RunContext* c = contexts[slot].load(std::memory_order_acquire)) return *c;
  const std::lock_guard<std::mutex> lock(mutex);
  if (!contexts[slot].load()) {
    owners[slot] = new std::shared_ptr<RunContext>(RunContext::create(device, device_index));
    contexts[slot].store(owners[slot]->get(), std::memory_order_release);
  }
  return *contexts[slot].load();
}

RunContext& current_context(Device device) {
  if (RunContext* bound = t_bound[kind(device)]) return *bound;
  return default_context(device, 0);
}

ContextScope::ContextScope(RunContext& context) : device_(context.device()) {
#ifdef DATTN_WITH_CUDA
  if (device_ == Device::CUDA) {
    previous_device_ = cuda::current_device();
    cuda::set_device(context.device_index());
  }
#endif
  previous_ = t_bound[kind(device_)];
  t_bound[kind(device_)] = &context;
}

ContextScope::~ContextScope() {
  t_bound[kind(device_)] = previous_;
#ifdef DATTN_WITH_CUDA
  if (previous_device_ >= 0) {
    try {
      cuda::set_device(previous_device_);
    } catch (...) {  // a destructor must not throw; the next CUDA call reports a broken device
    }
  }
#endif
}

}  // namespace dattn
