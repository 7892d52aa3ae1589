#pragma once
// The order every text-to-video family runs a request in, written once: the text stage, the observer's
// conditioning callback, the initial noise (given or drawn from the seed), denoising, the final latents
// copied to the host, and the VAE decode, each stage group's peak memory recorded. A family supplies the
// three stages; its run() binds its context and checks the request first.
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dattn/core/run_context.h"
#include "dattn/pipeline/pipeline.h"

namespace dattn::pipeline {

using StageTimes = std::vector<std::pair<std::string, double>>;

struct FamilyStages {
  // The conditioning of the prompt and, when `guidance`, of the negative prompt (with its stage times).
  std::function<void(bool guidance, Conditioning& prompt, std::optional<Conditioning>& negative, StageTimes& times)>
      encode;
  // The final latents (float32, run device) from the initial noise and the conditioning.
  std::function<Tensor(const Tensor& noise, Conditioning prompt, std::optional<Conditioning> negative,
                       GenerationReport& report)>
      denoise;
  // Frames [F, H, W, 3] in [0, 1] on the host from the final latents (float32, host).
  std::function<Tensor(const Tensor& latents, GenerationReport& report)> decode;
};

// `latent_shape` is the request's noise shape (used when it gives no initial latents).
GenerationResult run_family_stages(const FamilyStages& stages, const GenerationRequest& request, bool guidance,
                                   const Shape& latent_shape, RunContext& context, const ProgressObserver& observer,
                                   GenerationReport report);

}  // namespace dattn::pipeline
