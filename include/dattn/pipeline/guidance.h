#pragma once
// Classifier-free guidance strategies of the shared denoise loop: how the conditional and
// unconditional predictions of one step are made. Sequential runs two batch-1 forwards; batched runs
// one batch-2 forward (more work per launch, twice the activation memory); CFG-parallel (the two
// branches on two GPUs) comes with the multi-GPU work.
#include <memory>
#include <optional>
#include <string_view>

#include "dattn/models/denoiser.h"

namespace dattn {

enum class GuidanceMode { Sequential, Batched, CfgParallel };

// "sequential", "batched", "cfg-parallel".
std::string_view guidance_mode_name(GuidanceMode mode);
std::optional<GuidanceMode> parse_guidance_mode(std::string_view name);

class Guidance {
 public:
  virtual ~Guidance() = default;
  virtual GuidanceMode mode() const = 0;
  // Once per run, before the first step: the conditioning, and the unconditional one when guidance runs
  // (nullptr: no guidance, every step is one conditional prediction).
  virtual void prepare(const Conditioning& conditional, const Conditioning* unconditional) = 0;
  // The velocity at `latents` (batch 1) and timestep t: uncond + scale * (cond - uncond) with guidance,
  // the conditional prediction without. float32 on the latents' device.
  virtual Tensor velocity(const Denoiser& model, const Tensor& latents, double timestep, double scale) const = 0;
};

// UserError for CfgParallel until the multi-GPU runner provides it.
std::unique_ptr<Guidance> make_guidance(GuidanceMode mode);

}  // namespace dattn
