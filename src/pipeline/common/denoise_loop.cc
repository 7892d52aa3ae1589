// The shared denoising loop (see denoise_loop.h).
#include "pipeline/common/denoise_loop.h"

#include <string>

#include "pipeline/common/stage_clock.h"

namespace dattn::pipeline {

Tensor denoise(const Denoiser& model, Scheduler& scheduler, Guidance& guidance, DenoiseInputs inputs,
               const ProgressObserver& observer, const RunContext& context, std::vector<double>& step_ms) {
  guidance.prepare(inputs.conditional, inputs.unconditional ? &*inputs.unconditional : nullptr);
  Tensor latents = std::move(inputs.latents);
  const int n = scheduler.num_inference_steps();
  for (int i = 0; i < n; ++i) {
    if (observer.cancelled && observer.cancelled())
      throw RunCancelled("cancelled before denoising step " + std::to_string(i + 1) + " of " + std::to_string(n));
    StageClock clock;
    const double t = scheduler.timesteps()[static_cast<std::size_t>(i)];
    const Tensor velocity = guidance.velocity(model, latents, t, inputs.guidance_scale);
    latents = scheduler.step(velocity, i, latents);
    // The step's time is its device work's: wait for it (one stream synchronisation per step).
    context.synchronize();
    step_ms.push_back(clock.ms());
    if (observer.on_step) observer.on_step(i, n, t, latents, step_ms.back());
  }
  return latents;
}

}  // namespace dattn::pipeline
