#pragma once
// A run context: where one stream of work runs. On CUDA it owns the device index, a CUDA stream, the
// cuBLASLt handle and workspace (created on first use), and counters of the device memory its tensors
// hold; on the CPU it is a placeholder with the same interface. A pipeline owns one context and binds it
// to the calling thread while it runs a request (ContextScope); ops and kernels take their stream,
// handles and memory accounting from the context bound to the thread, and kernel launches take the
// stream explicitly. Two pipelines on two GPUs in one process, or a server thread owning its context,
// each bind their own. Code that binds none runs on the process default context of device 0.
#include <cstddef>
#include <memory>

#include "dattn/core/device.h"

namespace dattn {

class RunContext {
 public:
  // A CPU context, or a CUDA context on device `device_index` with a stream of its own. Throws
  // UserError when the build has no CUDA or the index is not a visible device.
  static std::shared_ptr<RunContext> create(Device device, int device_index = 0);
  ~RunContext();
  RunContext(const RunContext&) = delete;
  RunContext& operator=(const RunContext&) = delete;

  Device device() const { return device_; }
  int device_index() const { return device_index_; }
  // The cudaStream_t the context's work runs on (nullptr on the CPU).
  void* stream() const;
  // Waits until every piece of work queued on the context's stream has finished (no-op on the CPU).
  void synchronize() const;

  // Device memory held by tensors allocated while this context was bound: now, and the most at once
  // since the last reset_peak().
  std::size_t bytes_in_use() const;
  std::size_t bytes_peak() const;
  void reset_peak();

  // Library state that lives per context, made on first use by the layer that needs it (the cuBLASLt
  // handle, workspace and plan cache of ops/cuda). The slot is keyed by an address the owner picks.
  struct Extension {
    virtual ~Extension() = default;
  };
  Extension* extension(const void* key) const;
  Extension& set_extension(const void* key, std::unique_ptr<Extension> value);

  struct State;  // implementation (core/run_context.cc and core/cuda/)
  State& state() const { return *state_; }

 private:
  RunContext(Device device, int device_index);
  Device device_;
  int device_index_;
  std::unique_ptr<State> state_;
};

// The context bound to the calling thread; when none is bound, the process default context of `device`
// (device index 0 for CUDA), created on first use.
RunContext& current_context(Device device);

// Binds a context to the calling thread for a scope (and makes its device current on CUDA); the
// previous binding comes back when the scope ends. Scopes nest.
class ContextScope {
 public:
  explicit ContextScope(RunContext& context);
  ~ContextScope();
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  RunContext* previous_ = nullptr;
  int previous_device_ = -1;
};

}  // namespace dattn
