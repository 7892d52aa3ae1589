// The shared denoising loop (see denoise_loop.h).
#include "pipeline/common/denoise_loop.h"

#include <cstdio>
#include <string>

#include "dattn/core/error.h"
#include "dattn/ops/finite.h"
#include "pipeline/common/stage_clock.h"

namespace dattn::pipeline {
namespace {

// Stops the run at the step whose latents went NaN or Inf, with what produced them: the model's
// prediction (weights, activations overflowing) or the scheduler's update (the schedule, flow shift).
// Only reached on failure, so telling the two apart costs the fast path nothing.
void check_step(const Tensor& latents, const Tensor& velocity, int i, int n, double t) {
  const ops::NonFinite bad = ops::count_nonfinite(latents);
  if (bad.count == 0) return;
  const ops::NonFinite bad_velocity = ops::count_nonfinite(velocity);
  char where[96];
  std::snprintf(where, sizeof where, "denoising step %d of %d (timestep %g)", i + 1, n, t);
  const std::string counts = std::to_string(bad.nan) + " NaN and " + std::to_string(bad.count - bad.nan) +
                             " Inf of " + std::to_string(latents.numel()) + " latent values";
  const std::string cause =
      bad_velocity.count
          ? "the transformer's prediction was non-finite: likely causes are weights with NaN, Inf or huge values "
            "(a corrupt or mis-converted checkpoint), activations overflowing the run dtype (try --dtype bf16 or "
            "fp32), or non-finite inputs"
          : "the scheduler's update made them so (the prediction was finite): likely causes are a flow shift far "
            "outside what the model was trained with (--flow-shift, or flow_shift in scheduler_config.json) or a "
            "broken scheduler config";
  throw NumericError(std::string(where) + " produced non-finite latents (" + counts + "); " + cause +
                     ". Nothing was written.");
}

}  // namespace

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
    check_step(latents, velocity, i, n, t);  // one reduction; its 16-byte copy back also waits for the step
    // The step's time is its device work's: wait for it (one stream synchronisation per step).
    context.synchronize();
    step_ms.push_back(clock.ms());
    if (observer.on_step) observer.on_step(i, n, t, latents, step_ms.back());
  }
  return latents;
}

}  // namespace dattn::pipeline
