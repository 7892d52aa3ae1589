#pragma once
// Peak memory per pipeline stage: host resident set (VmHWM, reset between stages through
// /proc/self/clear_refs) and device memory held by the tensors of the pipeline's run context.
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include "dattn/core/run_context.h"
#include "dattn/pipeline/pipeline.h"

namespace dattn::pipeline {

// VmHWM in bytes, -1 when /proc is not there.
inline std::int64_t host_peak_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) {
      std::istringstream in(line.substr(6));
      std::int64_t kib = -1;
      in >> kib;
      return kib < 0 ? -1 : kib * 1024;
    }
  return -1;
}

// Starts a stage: the host peak is reset to the current RSS ("5" to clear_refs, Linux >= 4.0; where
// that is refused the peak stays cumulative, still an upper bound) and so is the device peak.
class StageMemoryScope {
 public:
  StageMemoryScope(std::string stage, RunContext& context) : stage_(std::move(stage)), context_(context) {
    std::ofstream("/proc/self/clear_refs") << "5";
    if (context_.device() == Device::CUDA) context_.reset_peak();
  }
  StageMemory finish() const {
    StageMemory m;
    m.stage = stage_;
    m.peak_host_bytes = host_peak_bytes();
    if (context_.device() == Device::CUDA) m.peak_device_bytes = static_cast<std::int64_t>(context_.bytes_peak());
    return m;
  }

 private:
  std::string stage_;
  RunContext& context_;
};

}  // namespace dattn::pipeline
