// The guidance strategies (see guidance.h).
#include "dattn/pipeline/guidance.h"

#include <memory>
#include <string>
#include <utility>

#include "dattn/core/error.h"
#include "dattn/ops/combine.h"

namespace dattn {
namespace {

class SequentialGuidance final : public Guidance {
 public:
  GuidanceMode mode() const override { return GuidanceMode::Sequential; }
  void prepare(const Conditioning& conditional, const Conditioning* unconditional) override {
    conditional_ = conditional;
    unconditional_ = unconditional ? std::optional<Conditioning>(*unconditional) : std::nullopt;
  }
  Tensor velocity(const Denoiser& model, const Tensor& latents, double t, double scale) const override {
    const Tensor cond = model.predict(latents, t, conditional_);
    if (!unconditional_) return cond;
    const Tensor uncond = model.predict(latents, t, *unconditional_);
    return ops::guidance_combine(cond, uncond, static_cast<float>(scale));
  }

 private:
  Conditioning conditional_;
  std::optional<Conditioning> unconditional_;
};

class BatchedGuidance final : public Guidance {
 public:
  GuidanceMode mode() const override { return GuidanceMode::Batched; }
  void prepare(const Conditioning& conditional, const Conditioning* unconditional) override {
    // The batch-2 conditioning is built once per run, not per step.
    batched_ = unconditional ? concat_batch(conditional, *unconditional) : conditional;
    guided_ = unconditional != nullptr;
  }
  Tensor velocity(const Denoiser& model, const Tensor& latents, double t, double scale) const override {
    if (!guided_) return model.predict(latents, t, batched_);
    const Tensor both = model.predict(concat_batch(latents, latents), t, batched_);
    return ops::guidance_combine(both.narrow0(0, 1), both.narrow0(1, 1), static_cast<float>(scale));
  }

 private:
  Conditioning batched_;
  bool guided_ = false;
};

// Rank 0 of the CFG group predicts the conditional branch, rank 1 the unconditional one; the two
// predictions are gathered ([cond; uncond] on both ranks) and combined as the other strategies combine
// them, so each rank's velocity is bit-identical to the sequential strategy's on one process.
class CfgParallelGuidance final : public Guidance {
 public:
  explicit CfgParallelGuidance(std::shared_ptr<parallel::Communicator> group) : group_(std::move(group)) {}
  GuidanceMode mode() const override { return GuidanceMode::CfgParallel; }
  void prepare(const Conditioning& conditional, const Conditioning* unconditional) override {
    // The pipelines refuse cfg-parallel for a request without guidance before any work (check()).
    if (unconditional == nullptr)
      throw UserError("guidance 'cfg-parallel' needs guidance to run (a guidance scale > 1): expected "
                      "--guidance-scale > 1 or --cfg-parallel-size 1");
    branch_ = group_->rank() == 0 ? conditional : *unconditional;
  }
  Tensor velocity(const Denoiser& model, const Tensor& latents, double t, double scale) const override {
    const Tensor mine = model.predict(latents, t, branch_);
    const Tensor both = parallel::all_gather_on_device(*group_, mine);
    return ops::guidance_combine(both.narrow0(0, 1), both.narrow0(1, 1), static_cast<float>(scale));
  }

 private:
  std::shared_ptr<parallel::Communicator> group_;
  Conditioning branch_;
};

}  // namespace

std::string_view guidance_mode_name(GuidanceMode mode) {
  switch (mode) {
    case GuidanceMode::Sequential: return "sequential";
    case GuidanceMode::Batched: return "batched";
    case GuidanceMode::CfgParallel: return "cfg-parallel";
  }
  return "?";
}

std::optional<GuidanceMode> parse_guidance_mode(std::string_view name) {
  for (GuidanceMode m : {GuidanceMode::Sequential, GuidanceMode::Batched, GuidanceMode::CfgParallel})
    if (name == guidance_mode_name(m)) return m;
  return std::nullopt;
}

std::unique_ptr<Guidance> make_guidance(GuidanceMode mode, const std::shared_ptr<parallel::Communicator>& cfg_group) {
  switch (mode) {
    case GuidanceMode::Sequential: return std::make_unique<SequentialGuidance>();
    case GuidanceMode::Batched: return std::make_unique<BatchedGuidance>();
    case GuidanceMode::CfgParallel: break;
  }
  const int ranks = cfg_group ? cfg_group->size() : 1;
  if (ranks != 2)
    throw UserError("guidance 'cfg-parallel' runs the two branches on a CFG group of 2 ranks (--cfg-parallel-size 2 "
                    "under mpirun); this run's CFG group has " + std::to_string(ranks) +
                    ": expected --cfg-parallel-size 2, or --guidance sequential or batched");
  return std::make_unique<CfgParallelGuidance>(cfg_group);
}

}  // namespace dattn
