// HunyuanVideo15Pipeline: the HunyuanVideo-1.5 family's adapter to the shared pipeline (see
// hv15_pipeline.h). Its own logic is the text stage (two encoders), the schedule (the pipeline's given
// sigmas), how the transformer is conditioned, and the VAE decode; the denoise loop is the shared one.
#include "dattn/pipeline/hunyuanvideo15/hv15_pipeline.h"

#include <memory>
#include <optional>

#include "dattn/core/error.h"
#include "dattn/core/run_context.h"
#include "dattn/models/attention_roles.h"
#include "dattn/models/hunyuanvideo15/transformer.h"
#include "dattn/pipeline/flow_match_euler_scheduler.h"
#include "pipeline/common/component_slot.h"
#include "pipeline/common/library_warmup.h"
#include "pipeline/common/load_ahead.h"
#include "pipeline/common/denoise_loop.h"
#include "pipeline/common/family_run.h"
#include "pipeline/common/parallel_checks.h"
#include "pipeline/common/memory_check.h"
#include "pipeline/common/stage_clock.h"
#include "pipeline/common/decoded_frames.h"
#include "pipeline/hunyuanvideo15/request_memory.h"
#include "pipeline/hunyuanvideo15/text_stage.h"
#include "pipeline/schedulers/schedule_math.h"

namespace dattn {
namespace {

using pipeline::ComponentSlot;
using pipeline::StageClock;
using pipeline::StageTimes;

class Hv15Pipeline final : public Pipeline {
 public:
  Hv15Pipeline(const std::string& dir, const PipelineOptions& options)
      : info_(inspect_hv15_pipeline(dir)),
        options_(options),
        class_name_("HunyuanVideo15Pipeline"),
        context_(RunContext::create(options.device, options.device_index)),
        loader_(*context_) {
    // Sequential by default, as for Wan: two batch-1 forwards, the activation memory of one.
    guidance_mode_ = options.guidance.value_or(GuidanceMode::Sequential);
    pipeline::check_parallel_degrees(options, guidance_mode_, info_.transformer.num_attention_heads,
                                     "HunyuanVideo15Pipeline's transformer", true, true);
    pipeline::check_tensor_parallel_split(options, info_.transformer.num_attention_heads, info_.transformer.mlp_dim(),
                                          "HunyuanVideo15Pipeline's transformer");
    (void)make_guidance(guidance_mode_, options.parallel.cfg);
    libraries_ = pipeline::prepare_libraries_in_background(context_);  // beside the loads below
    text_ = ComponentSlot<hv15::TextEncoders>("text encoders", options.residency, options.device, [this] {
      return hv15::load_text_encoders(info_, options_.device, options_.dtype, options_.attention);
    });
    transformer_ = ComponentSlot<HunyuanVideo15Transformer>("transformer", options.residency, options.device, [this] {
      Hv15RunOptions o{options_.device, options_.dtype, hv15::transformer_attention(options_.attention)};
      o.quantization = options_.quantization;
      o.ulysses = options_.parallel.ulysses;
      o.tensor_parallel = options_.parallel.tensor_parallel;
      return std::make_unique<HunyuanVideo15Transformer>(HunyuanVideo15Transformer::load(info_.transformer_dir, o));
    });
    vae_dtype_ = pipeline_vae_dtype(options_);  // checked here, before any weight is read
    vae_ = ComponentSlot<HunyuanVideo15Vae>("vae", options.residency, options.device, [this] {
      // fp32 (on CUDA the convolutions use TF32 as PyTorch's do), or bf16 for a bf16 run on CUDA
      // (pipeline_vae_dtype).
      return std::make_unique<HunyuanVideo15Vae>(HunyuanVideo15Vae::load(info_.vae_dir, options_.device, vae_dtype_));
    }, pipeline::warm_up_vae_on_cuda<HunyuanVideo15Vae>);
    attention_ = resolutions();
    if (options_.residency == Residency::Resident) {
      const ContextScope bound(*context_);
      StageTimes ignored;
      text_.acquire(ignored);
      transformer_.acquire(ignored);
      vae_.acquire(ignored);
    }
  }

  const std::string& class_name() const override { return class_name_; }
  const std::string& model_dir() const override { return info_.dir; }
  const PipelineOptions& options() const override { return options_; }
  RunContext& context() const override { return *context_; }
  std::vector<Resolution> attention() const override { return attention_; }
  // diffusers' pipeline has no guidance_scale argument: its guider's (guider_config.json) is the one used.
  double default_guidance_scale() const override { return info_.guider_scale; }

  void check(const GenerationRequest& request) const override {
    check_hv15_request(info_, request);
    const double scale = request.guidance_scale.value_or(default_guidance_scale());
    pipeline::check_cfg_parallel_request(guidance_mode_, info_.guider_enabled && scale > 1.0, scale);
    const Shape latents = latent_shape(request);
    const auto patch = info_.transformer.patch();
    pipeline::check_ulysses_tokens(options_, latents[2] / patch[0] * (latents[3] / patch[1]) * (latents[4] / patch[2]));
    const ContextScope bound(*context_);
    pipeline::check_memory_fits(hv15_request_memory(info_, request, options_),
                                "try a smaller --height/--width or fewer --num-frames");
  }
  Shape latent_shape(const GenerationRequest& request) const override { return hv15_latent_shape(info_, request); }

  GenerationResult run(const GenerationRequest& request, const ProgressObserver& observer) override {
    check(request);
    const ContextScope bound(*context_);
    // diffusers: the guider runs two conditions when enabled and guidance_scale > 1.
    const double scale = request.guidance_scale.value_or(default_guidance_scale());
    const bool guidance = info_.guider_enabled && scale > 1.0;
    GenerationReport report;
    report.guidance_scale = scale;
    report.guidance = guidance_mode_;
    report.attention = attention_;
    pipeline::FamilyStages stages;
    stages.encode = [&](bool g, Conditioning& prompt, std::optional<Conditioning>& negative, StageTimes& times) {
      auto text = text_.acquire(times);
      // After the encoders' load (as Wan's: two loads at once were slower than one after the other).
      if (pipeline::transformer_loads_beside_text(options_, hv15_request_memory(info_, request, options_)))
        transformer_.load_ahead(loader_.get(), context_);
      StageClock clock;
      prompt = hv15::encode_prompt(*text, request.prompt, options_.device, options_.dtype);
      if (g) negative = hv15::encode_prompt(*text, request.negative_prompt, options_.device, options_.dtype);
      context_->synchronize();  // the encoders' device work belongs to this stage's time
      times.emplace_back("text encoding", clock.ms());
    };
    stages.denoise = [&](const Tensor& noise, Conditioning prompt, std::optional<Conditioning> negative,
                         GenerationReport& r) { return denoise(request, noise, std::move(prompt), std::move(negative), observer, r); };
    stages.decode = [&](const Tensor& latents, GenerationReport& r) {
      StageTimes& times = r.stage_ms;
      auto vae = vae_.acquire(times, &r.loaded_ahead_ms);
      StageClock clock;
      const Tensor decoded = vae->decode(hunyuanvideo15_unscale_latents(latents.to(options_.device), vae->config()));
      // Checked (the latents were finite: NaN or Inf here is the VAE's) and handed over whole.
      Tensor frames = pipeline::DecodedFrames(observer.on_frames).finish(decoded);
      times.emplace_back("vae decode", clock.ms());
      return frames;
    };
    return pipeline::run_family_stages(stages, request, guidance, latent_shape(request), *context_, observer,
                                       std::move(report));
  }

 private:
  Tensor denoise(const GenerationRequest& request, const Tensor& noise, Conditioning prompt,
                 std::optional<Conditioning> negative, const ProgressObserver& observer, GenerationReport& report) {
    const auto scheduler = load_scheduler(info_.scheduler_config, SchedulerOverrides{request.flow_shift});
    auto* euler = dynamic_cast<FlowMatchEulerDiscreteScheduler*>(scheduler.get());
    if (!euler) throw UserError(info_.scheduler_config + ": expected FlowMatchEulerDiscreteScheduler");
    // The pipeline's sigmas: np.linspace(1.0, 0.0, steps + 1)[:-1].
    std::vector<double> sigmas = sched::np_linspace(1.0, 0.0, request.num_inference_steps + 1);
    sigmas.pop_back();
    euler->set_sigmas(sigmas);
    auto model = transformer_.acquire(report.stage_ms, &report.loaded_ahead_ms);
    report.attention = model->attention_resolutions();
    if (pipeline::vae_loads_beside_denoising(options_, hv15_request_memory(info_, request, options_))) vae_.load_ahead(loader_.get(), context_);
    StageClock clock;
    const auto guidance = make_guidance(guidance_mode_, options_.parallel.cfg);
    pipeline::DenoiseInputs inputs{noise.to(DType::F32).to(options_.device), std::move(prompt), std::move(negative),
                                   request.guidance_scale.value_or(default_guidance_scale())};
    Tensor latents = pipeline::denoise(*model, *scheduler, *guidance, std::move(inputs), observer, *context_,
                                       report.step_ms);
    report.stage_ms.emplace_back("denoising", clock.ms());
    return latents;
  }

  // What the transformer's layers will resolve to, from the same declarations its blocks use.
  std::vector<Resolution> resolutions() const {
    const AttentionSettings s = hv15::transformer_attention(options_.attention);
    const auto roles = hunyuanvideo15_attention_roles(info_.transformer, options_.dtype);
    check_per_role_keys(s.config, roles, "HunyuanVideo15Pipeline's transformer");
    std::vector<Resolution> out;
    for (const AttentionRoleDecl& role : roles)
      out.push_back(resolve_attention(s, role.role, role.category, role.nominal, options_.device));
    return out;
  }

  Hv15PipelineInfo info_;
  PipelineOptions options_;
  std::string class_name_;
  GuidanceMode guidance_mode_ = GuidanceMode::Sequential;
  std::vector<Resolution> attention_;
  std::shared_ptr<RunContext> context_;
  ComponentSlot<hv15::TextEncoders> text_;
  ComponentSlot<HunyuanVideo15Transformer> transformer_;
  ComponentSlot<HunyuanVideo15Vae> vae_;
  pipeline::LoadAheadContext loader_;  // where loads ahead run (made on first use)
  DType vae_dtype_ = DType::F32;
  pipeline::JoiningThread libraries_;  // last: joined before anything it runs beside is destroyed
};

}  // namespace

std::unique_ptr<Pipeline> make_hv15_pipeline(const std::string& dir, const PipelineOptions& options) {
  return std::make_unique<Hv15Pipeline>(dir, options);
}

}  // namespace dattn
