// Loads ahead of their stage (see load_ahead.h).
#include "pipeline/common/load_ahead.h"

#include <stdexcept>

#include "dattn/core/process_memory.h"

namespace dattn::pipeline {

bool load_ahead_enabled(const PipelineOptions& options) {
  if (options.residency != Residency::PerStage) return false;
  if (options.parallel.world && options.parallel.world->size() > 1) return false;
  switch (options.load_ahead) {
    case LoadAhead::On:
      return true;
    case LoadAhead::Auto:
      return options.device == Device::CUDA;
    case LoadAhead::Off:
      break;
  }
  return false;
}

bool fits_now(std::int64_t bytes, Device device) {
  const std::int64_t available = device == Device::CUDA ? cuda_free_memory_bytes() : host_memory_available_bytes();
  if (available < 0) return false;
  constexpr std::int64_t kGiB = std::int64_t{1} << 30;
  return bytes + bytes / 10 + kGiB <= available;
}

namespace {

const StageNeed& stage_need(const std::vector<StageNeed>& needs, const std::string& stage) {
  for (const StageNeed& s : needs)
    if (s.stage == stage) return s;
  throw std::logic_error("load ahead: no memory estimate for the stage '" + stage + "'");
}

std::int64_t part_bytes(const StageNeed& need, const std::string& part) {
  for (const auto& [name, bytes] : need.parts)
    if (name == part) return bytes;
  return 0;
}

}  // namespace

bool transformer_loads_beside_text(const PipelineOptions& options, const std::vector<StageNeed>& needs) {
  return load_ahead_enabled(options) && fits_now(stage_need(needs, "denoising").total(), options.device);
}

bool vae_loads_beside_denoising(const PipelineOptions& options, const std::vector<StageNeed>& needs) {
  if (!load_ahead_enabled(options)) return false;
  const StageNeed& denoising = stage_need(needs, "denoising");
  return fits_now(denoising.total() - part_bytes(denoising, "transformer weights") +
                      stage_need(needs, "vae decode").total(),
                  options.device);
}

std::shared_ptr<RunContext> LoadAheadContext::get() {
  if (!context_) context_ = RunContext::create(device_, device_index_);
  return context_;
}

}  // namespace dattn::pipeline
