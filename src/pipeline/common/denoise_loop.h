#pragma once
// The denoising loop every family shares: per step one guided velocity (the Guidance strategy calls
// the Denoiser), one scheduler step, all on the run device, so the latents never leave it between steps.
#include <vector>

#include "dattn/core/run_context.h"
#include "dattn/models/denoiser.h"
#include "dattn/pipeline/guidance.h"
#include "dattn/pipeline/pipeline.h"
#include "dattn/pipeline/scheduler.h"

namespace dattn::pipeline {

struct DenoiseInputs {
  Tensor latents;  // initial noise [1, C, F', H', W'], float32 on the run device
  Conditioning conditional;
  std::optional<Conditioning> unconditional;  // given when guidance runs
  double guidance_scale = 1.0;
};

// Runs scheduler.num_inference_steps() steps (set_timesteps already called) and returns the final
// latents (float32, run device), on the context bound to the thread. After every step the latents are
// checked for NaN/Inf (one reduction): NumericError naming the step, and whether the model's prediction
// or the scheduler's update went non-finite, with the likely causes. Each step's wall time (device work finished) goes to step_ms and to the
// observer; the observer's `cancelled` is asked before every step.
Tensor denoise(const Denoiser& model, Scheduler& scheduler, Guidance& guidance, DenoiseInputs inputs,
               const ProgressObserver& observer, const RunContext& context, std::vector<double>& step_ms);

}  // namespace dattn::pipeline
