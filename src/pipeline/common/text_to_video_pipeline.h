#pragma once
// What every text-to-video family's Pipeline holds and does the same way, written once: the pipeline's
// info, options and run context; its three component slots (text encoder(s), transformer, VAE) with the
// loads ahead between them; the parallel-mode and request checks every family makes; and the denoising
// stage around the shared loop. A family (wan/, hunyuanvideo15/) derives from it, makes its three slots,
// and adds only its own logic: the text stage, the schedule, the VAE decode.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dattn/core/run_context.h"
#include "dattn/models/attention_roles.h"
#include "dattn/pipeline/guidance.h"
#include "dattn/pipeline/pipeline.h"
#include "dattn/pipeline/scheduler.h"
#include "pipeline/common/component_slot.h"
#include "pipeline/common/denoise_loop.h"
#include "pipeline/common/family_run.h"
#include "pipeline/common/library_warmup.h"
#include "pipeline/common/load_ahead.h"
#include "pipeline/common/memory_check.h"
#include "pipeline/common/parallel_checks.h"
#include "pipeline/common/stage_clock.h"

namespace dattn::pipeline {

// The attention resolution of each role a transformer declares (`roles`), as its blocks will resolve
// them when built; a per-role key for no declared role fails first (`model` names the transformer).
std::vector<Resolution> resolve_roles(const AttentionSettings& settings, const std::vector<AttentionRoleDecl>& roles,
                                      const std::string& model, Device device);

// `Info` has the pipeline's directory as `dir`.
template <class Info, class Text, class Transformer, class Vae>
class TextToVideoPipeline : public Pipeline {
 public:
  const std::string& class_name() const override { return class_name_; }
  const std::string& model_dir() const override { return info_.dir; }
  const PipelineOptions& options() const override { return options_; }
  RunContext& context() const override { return *context_; }
  std::vector<Resolution> attention() const override { return attention_; }

 protected:
  TextToVideoPipeline(Info info, std::string class_name, const PipelineOptions& options)
      : info_(std::move(info)),
        options_(options),
        class_name_(std::move(class_name)),
        model_(class_name_ + "'s transformer"),
        context_(RunContext::create(options.device, options.device_index)),
        loader_(*context_) {}

  // The parallel degrees against the transformer's heads and FFN width, the guidance strategy
  // (sequential unless asked; an unavailable one fails here) and the VAE's dtype; then the libraries'
  // set-up starts beside the loads that follow. Call first in the family's constructor.
  void check_parallel_setup(std::int64_t attention_heads, std::int64_t ffn_dim) {
    // Sequential by default: on the H200 at Wan2.2-5B size both strategies step in the same time (524.2
    // vs 524.7 ms) and sequential holds ~1 GiB less (bench/results/2026-12-01-h200-pipeline-step.md).
    guidance_mode_ = options_.guidance.value_or(GuidanceMode::Sequential);
    check_parallel_degrees(options_, guidance_mode_, attention_heads, model_, true, true);
    check_tensor_parallel_split(options_, attention_heads, ffn_dim, model_);
    (void)make_guidance(guidance_mode_, options_.parallel.cfg);
    vae_dtype_ = pipeline_vae_dtype(options_);
    libraries_ = prepare_libraries_in_background(context_);
  }

  // The end of the family's constructor, its slots made: the attention roles it resolves (before any
  // weight is read, so an explicit backend that cannot run them fails here), then a Resident pipeline's
  // components loaded on the pipeline's context.
  void finish_setup(std::vector<Resolution> attention) {
    attention_ = std::move(attention);
    if (options_.residency != Residency::Resident) return;
    const ContextScope bound(*context_);
    StageTimes ignored;
    text_.acquire(ignored);
    transformer_.acquire(ignored);
    vae_.acquire(ignored);
  }

  // The checks every family makes of a request beyond its own fields: CFG parallel needs guidance, the
  // video's `tokens` divide by the Ulysses degree, the stages' `memory` fits.
  void check_run(bool guidance, double scale, std::int64_t tokens, const std::vector<StageNeed>& memory) const {
    check_cfg_parallel_request(guidance_mode_, guidance, scale);
    check_ulysses_tokens(options_, tokens);
    const ContextScope bound(*context_);  // the device whose free memory counts
    check_memory_fits(memory, "try a smaller --height/--width or fewer --num-frames");
  }

  GenerationReport new_report(double scale) const {
    GenerationReport report;
    report.guidance_scale = scale;
    report.guidance = guidance_mode_;
    report.attention = attention_;
    return report;
  }

  // The text encoder(s) for the text stage; then the transformer starts loading ahead when it fits beside
  // them. After the encoders' load, not beside it: two loads at once share the host's copies and were
  // slower together than one after the other (bench/notes/loading.md).
  std::shared_ptr<Text> acquire_text(StageTimes& times, const std::vector<StageNeed>& memory) {
    auto text = text_.acquire(times);
    if (transformer_loads_beside_text(options_, memory)) transformer_.load_ahead(loader_.get(), context_);
    return text;
  }

  // The denoising stage: the transformer, the VAE loading ahead beside it when it fits, and the shared
  // loop over `scheduler` (its timesteps set) from `noise` (any float dtype, any device).
  Tensor denoise_stage(Scheduler& scheduler, const Tensor& noise, Conditioning prompt,
                       std::optional<Conditioning> negative, double scale, const std::vector<StageNeed>& memory,
                       const ProgressObserver& observer, GenerationReport& report) {
    auto model = transformer_.acquire(report.stage_ms, &report.loaded_ahead_ms);
    // The transformer's roles as its layers resolved them, then any other component's (a text encoder's) as
    // set up: every attention the run used.
    report.attention = model->attention_resolutions();
    for (const Resolution& r : attention_)
      if (std::none_of(report.attention.begin(), report.attention.end(),
                       [&](const Resolution& m) { return m.role == r.role; }))
        report.attention.push_back(r);
    if (vae_loads_beside_denoising(options_, memory)) vae_.load_ahead(loader_.get(), context_);
    StageClock clock;
    const auto guidance = make_guidance(guidance_mode_, options_.parallel.cfg);
    DenoiseInputs inputs{noise.to(DType::F32).to(options_.device), std::move(prompt), std::move(negative), scale};
    Tensor latents = denoise(*model, scheduler, *guidance, std::move(inputs), observer, *context_, report.step_ms);
    report.stage_ms.emplace_back("denoising", clock.ms());
    return latents;
  }

  // Declared first: the slots' loaders read it, also from a load ahead still running at destruction.
  const Info info_;
  const PipelineOptions options_;
  const std::string class_name_;
  const std::string model_;  // the transformer in messages: "WanPipeline's transformer"
  GuidanceMode guidance_mode_ = GuidanceMode::Sequential;
  std::vector<Resolution> attention_;
  std::shared_ptr<RunContext> context_;
  ComponentSlot<Text> text_;
  ComponentSlot<Transformer> transformer_;
  ComponentSlot<Vae> vae_;
  DType vae_dtype_ = DType::F32;  // pipeline_vae_dtype: fp32, or bf16 for a bf16 run on CUDA
  LoadAheadContext loader_;  // where loads ahead run (made on first use)
  JoiningThread libraries_;  // last: joined before anything it runs beside is destroyed
};

}  // namespace dattn::pipeline
