#pragma once
// Time per stage (attention, GEMM, ...) for benchmarks and run summaries. Off by default, when a scope
// costs one branch. When enabled, each StageScope adds the time of the work it encloses to its stage:
// on Device::CUDA with a pair of CUDA events on the stream of the context current when the scope began
// (asynchronous; collect() waits), on the CPU with a steady clock. Scopes of the same stage must not nest. Only the thread
// that called enable() records (one model runs at a time there); scopes on other threads, such as a load
// running ahead of its stage, cost one check and record nothing.
#include <map>
#include <string>

#include "dattn/core/device.h"

namespace dattn {

class StageTimer {
 public:
  static void enable(Device device);
  static void disable();
  static bool enabled();
  // Milliseconds per stage since enable() (or the last collect), then starts afresh.
  static std::map<std::string, double> collect();
};

class StageScope {
 public:
  explicit StageScope(const char* stage);
  ~StageScope();
  StageScope(const StageScope&) = delete;
  StageScope& operator=(const StageScope&) = delete;

 private:
  const char* stage_ = nullptr;
  long long slot_ = -1;
};

}  // namespace dattn
