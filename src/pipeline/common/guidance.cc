// The guidance strategies (see guidance.h).
#include "dattn/pipeline/guidance.h"

#include <string>

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

std::unique_ptr<Guidance> make_guidance(GuidanceMode mode) {
  switch (mode) {
    case GuidanceMode::Sequential: return std::make_unique<SequentialGuidance>();
    case GuidanceMode::Batched: return std::make_unique<BatchedGuidance>();
    case GuidanceMode::CfgParallel: break;
  }
  throw UserError("guidance 'cfg-parallel' runs the two branches on two GPUs (--cfg-parallel-size 2), which this "
                  "build cannot do yet; use 'sequential' or 'batched'");
}

}  // namespace dattn
