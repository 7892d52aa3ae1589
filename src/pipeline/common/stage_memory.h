#pragma once
// Peak memory per pipeline stage: host resident set (VmHWM, reset between stages through
// /proc/self/clear_refs) and device memory held by dattn's tensors on the pipeline's device, every context
// together (a component loaded ahead is held by the loading context's tensors).
#include <cstdint>
#include <string>
#include <utility>

#include "dattn/core/process_memory.h"
#include "dattn/core/run_context.h"
#include "dattn/pipeline/pipeline.h"

namespace dattn::pipeline {

// Starts a stage: the host peak is reset to the current RSS ("5" to clear_refs, Linux >= 4.0; where
// that is refused the peak stays cumulative, still an upper bound) and so is the device peak.
class StageMemoryScope {
 public:
  StageMemoryScope(std::string stage, RunContext& context) : stage_(std::move(stage)), context_(context) {
    reset_host_peak_rss();
    if (context_.device() == Device::CUDA) device_memory_counter(context_.device_index()).reset_peak();
  }
  StageMemory finish() const {
    StageMemory m;
    m.stage = stage_;
    m.peak_host_bytes = host_peak_rss_bytes();
    if (context_.device() == Device::CUDA)
      m.peak_device_bytes = static_cast<std::int64_t>(device_memory_counter(context_.device_index()).peak());
    return m;
  }

 private:
  std::string stage_;
  RunContext& context_;
};

}  // namespace dattn::pipeline
