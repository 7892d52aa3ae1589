#pragma once
// When and where a PerStage pipeline loads a component ahead of its stage (PipelineOptions::load_ahead,
// ComponentSlot::load_ahead): the policy, the memory test and the context the loads run on.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dattn/core/run_context.h"
#include "dattn/pipeline/pipeline.h"
#include "pipeline/common/memory_check.h"

namespace dattn::pipeline {

// Whether `options` lets components load ahead at all: a PerStage pipeline of one process (a rank's
// loads stay in the order every rank runs them) with LoadAhead::On, or Auto on CUDA.
bool load_ahead_enabled(const PipelineOptions& options);

// Whether `bytes` more fit now beside what is held: the free memory of the current CUDA device (for
// `device` CUDA) or the host's MemAvailable, less a margin for the estimates' slack (a tenth, and 1 GiB).
// False where the free memory cannot be asked.
bool fits_now(std::int64_t bytes, Device device);

// The two loads ahead of a text-to-video family, each when enabled and when it fits. `needs` is the
// family's request memory estimate (its stages "denoising" and "vae decode").
// The transformer beside text encoding (the encoders loaded): the denoising stage's whole estimate.
bool transformer_loads_beside_text(const PipelineOptions& options, const std::vector<StageNeed>& needs);
// The VAE beside denoising (the transformer already loaded): denoising's working set and the decode's
// estimate together.
bool vae_loads_beside_denoising(const PipelineOptions& options, const std::vector<StageNeed>& needs);

// The context loads ahead run on, made on first use beside a pipeline's own: on CUDA a second context
// on the same device, so a load's copies run on a stream (and staging ring) of their own.
class LoadAheadContext {
 public:
  explicit LoadAheadContext(const RunContext& user) : device_(user.device()), device_index_(user.device_index()) {}
  std::shared_ptr<RunContext> get();

 private:
  Device device_;
  int device_index_;
  std::shared_ptr<RunContext> context_;
};

}  // namespace dattn::pipeline
