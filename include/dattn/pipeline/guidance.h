#pragma once
// Classifier-free guidance strategies of the shared denoise loop: how the conditional and
// unconditional predictions of one step are made. Sequential runs two batch-1 forwards; batched runs
// one batch-2 forward (more work per launch, twice the activation memory); CFG-parallel runs one
// branch on each rank of a CFG group of two (rank 0 the conditional, rank 1 the unconditional) and
// gathers the two predictions, so every rank combines the same two tensors with the same formula and
// steps its scheduler identically (no broadcast of the latents is needed).
#include <memory>
#include <optional>
#include <string_view>

#include "dattn/models/denoiser.h"
#include "dattn/parallel/communicator.h"

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

// `cfg_group` is the CFG group of the run's ranks (parallel/groups.h), used by CfgParallel only, which
// needs one of two ranks: UserError otherwise, naming --cfg-parallel-size.
std::unique_ptr<Guidance> make_guidance(GuidanceMode mode,
                                        const std::shared_ptr<parallel::Communicator>& cfg_group = nullptr);

}  // namespace dattn
