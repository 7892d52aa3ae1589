// The shared request order (see family_run.h).
#include "pipeline/common/family_run.h"

#include "dattn/pipeline/noise.h"
#include "pipeline/common/stage_memory.h"

namespace dattn::pipeline {

GenerationResult run_family_stages(const FamilyStages& stages, const GenerationRequest& request, bool guidance,
                                   const Shape& latent_shape, RunContext& context, const ProgressObserver& observer,
                                   GenerationReport report) {
  GenerationResult result;
  result.report = std::move(report);
  GenerationReport& r = result.report;
  Conditioning prompt;
  std::optional<Conditioning> negative;
  {
    const StageMemoryScope memory("text encoder", context);
    stages.encode(guidance, prompt, negative, r.stage_ms);
    r.stage_memory.push_back(memory.finish());
  }
  if (observer.on_conditioning) observer.on_conditioning(prompt, negative ? &*negative : nullptr);

  const Tensor noise =
      request.initial_latents.defined() ? request.initial_latents : seeded_gaussian(latent_shape, request.seed);
  Tensor latents;
  {
    const StageMemoryScope memory("denoising", context);
    latents = stages.denoise(noise, std::move(prompt), std::move(negative), r);
    r.stage_memory.push_back(memory.finish());
  }
  result.final_latents = latents.to(Device::CPU);
  {
    const StageMemoryScope memory("vae decode", context);
    result.frames = stages.decode(result.final_latents, r.stage_ms);
    r.stage_memory.push_back(memory.finish());
  }
  return result;
}

}  // namespace dattn::pipeline
