// The shared request order (see family_run.h).
#include "pipeline/common/family_run.h"

#include <future>

#include "dattn/core/stage_timer.h"
#include "dattn/pipeline/noise.h"
#include "pipeline/common/stage_memory.h"

namespace dattn::pipeline {
namespace {

// The ops' time in the stage group that just ended (StageTimer on): what the wall time of the group is
// made of, and what it is not (the gap is host work, synchronisation or idle device).
void record_op_times(const char* group, GenerationReport& r) {
  if (StageTimer::enabled()) r.op_ms.emplace_back(group, StageTimer::collect());
}

}  // namespace

GenerationResult run_family_stages(const FamilyStages& stages, const GenerationRequest& request, bool guidance,
                                   const Shape& latent_shape, RunContext& context, const ProgressObserver& observer,
                                   GenerationReport report) {
  GenerationResult result;
  result.report = std::move(report);
  GenerationReport& r = result.report;
  Conditioning prompt;
  std::optional<Conditioning> negative;
  if (StageTimer::enabled()) StageTimer::collect();  // what ran before this request is not its
  // The seeded noise depends on the request alone: drawn on a thread of its own beside the text encoding
  // (2.2 M values at 704x1280x49: 63-77 ms of host time that sat between the stages).
  std::future<Tensor> seeded;
  if (!request.initial_latents.defined())
    seeded = std::async(std::launch::async, [&] { return seeded_gaussian(latent_shape, request.seed); });
  {
    const StageMemoryScope memory("text encoder", context);
    stages.encode(guidance, prompt, negative, r.stage_ms);
    r.stage_memory.push_back(memory.finish());
    record_op_times("text encoder", r);
  }
  if (observer.on_conditioning) observer.on_conditioning(prompt, negative ? &*negative : nullptr);

  const Tensor noise = request.initial_latents.defined() ? request.initial_latents : seeded.get();
  Tensor latents;
  {
    const StageMemoryScope memory("denoising", context);
    latents = stages.denoise(noise, std::move(prompt), std::move(negative), r);
    r.stage_memory.push_back(memory.finish());
    record_op_times("denoising", r);
  }
  result.final_latents = latents.to(Device::CPU);
  {
    const StageMemoryScope memory("vae decode", context);
    result.frames = stages.decode(result.final_latents, r);
    r.stage_memory.push_back(memory.finish());
    record_op_times("vae decode", r);
  }
  return result;
}

}  // namespace dattn::pipeline
