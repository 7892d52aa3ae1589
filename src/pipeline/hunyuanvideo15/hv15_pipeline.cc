// HunyuanVideo15Pipeline: the HunyuanVideo-1.5 family's adapter to the shared pipeline (see
// hv15_pipeline.h). Its own logic is the text stage (two encoders), the schedule (the pipeline's given
// sigmas), how the transformer is conditioned, and the VAE decode; the denoise loop is the shared one.
#include "dattn/pipeline/hunyuanvideo15/hv15_pipeline.h"

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "dattn/core/error.h"
#include "dattn/core/run_context.h"
#include "dattn/models/attention_roles.h"
#include "dattn/models/hunyuanvideo15/transformer.h"
#include "dattn/models/qwen2_5_vl.h"
#include "dattn/pipeline/flow_match_euler_scheduler.h"
#include "pipeline/common/decoded_frames.h"
#include "pipeline/common/text_to_video_pipeline.h"
#include "pipeline/hunyuanvideo15/request_memory.h"
#include "pipeline/hunyuanvideo15/text_stage.h"
#include "pipeline/schedulers/schedule_math.h"

namespace dattn {
namespace {

using pipeline::ComponentSlot;
using pipeline::StageClock;
using pipeline::StageTimes;

using Hv15Base = pipeline::TextToVideoPipeline<Hv15PipelineInfo, hv15::TextEncoders, HunyuanVideo15Transformer,
                                               HunyuanVideo15Vae>;

class Hv15Pipeline final : public Hv15Base {
 public:
  Hv15Pipeline(const std::string& dir, const PipelineOptions& options)
      : Hv15Base(inspect_hv15_pipeline(dir), "HunyuanVideo15Pipeline", options) {
    // Sequential guidance by default, as for Wan: two batch-1 forwards, the activation memory of one.
    check_parallel_setup(info_.transformer.num_attention_heads, info_.transformer.mlp_dim());
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
    vae_ = ComponentSlot<HunyuanVideo15Vae>("vae", options.residency, options.device, [this] {
      // fp32 (on CUDA the convolutions use TF32 as PyTorch's do), or bf16 for a bf16 run on CUDA
      // (pipeline_vae_dtype).
      return std::make_unique<HunyuanVideo15Vae>(HunyuanVideo15Vae::load(info_.vae_dir, options_.device, vae_dtype_));
    }, pipeline::warm_up_vae_on_cuda<HunyuanVideo15Vae>);
    std::vector<Resolution> roles = pipeline::resolve_roles(
        hv15::transformer_attention(options_.attention), hunyuanvideo15_attention_roles(info_.transformer, options_.dtype),
        model_, options_.device);
    // The text encoder's role too, resolved as its load resolves it, so that the summary, the report and
    // /v1/models list every attention that runs.
    const DType text_dtype = options_.dtype == DType::BF16 ? DType::BF16 : DType::F32;
    for (Resolution& r : pipeline::resolve_roles(
             hv15::text_encoder_attention(options_.attention),
             qwen2_5_vl_text_attention_roles(Qwen25VLTextConfig::load(info_.text_encoder_dir), text_dtype, kHv15QwenTokens),
             class_name_ + "'s text encoder", options_.device))
      roles.push_back(std::move(r));
    finish_setup(std::move(roles));
  }

  // diffusers' pipeline has no guidance_scale argument: its guider's (guider_config.json) is the one used,
  // and a guider with enabled false runs none (1). An explicit --guidance-scale wins over the guider config,
  // as --flow-shift wins over the scheduler config: above 1 it guides even when the config says disabled.
  double default_guidance_scale() const override { return info_.guider_enabled ? info_.guider_scale : 1.0; }

  void check(const GenerationRequest& request) const override {
    check_hv15_request(info_, request);
    const double scale = request.guidance_scale.value_or(default_guidance_scale());
    const Shape latents = latent_shape(request);
    const auto patch = info_.transformer.patch();
    check_run(scale > 1.0, scale,
              latents[2] / patch[0] * (latents[3] / patch[1]) * (latents[4] / patch[2]),
              hv15_request_memory(info_, request, options_));
  }
  Shape latent_shape(const GenerationRequest& request) const override { return hv15_latent_shape(info_, request); }

  GenerationResult run(const GenerationRequest& request, const ProgressObserver& observer) override {
    check(request);
    const ContextScope bound(*context_);
    // diffusers: the guider runs two conditions when enabled and guidance_scale > 1.
    const double scale = request.guidance_scale.value_or(default_guidance_scale());
    const bool guidance = scale > 1.0;
    const auto memory = hv15_request_memory(info_, request, options_);
    pipeline::FamilyStages stages;
    stages.encode = [&](bool g, Conditioning& prompt, std::optional<Conditioning>& negative, StageTimes& times) {
      auto text = acquire_text(times, memory);
      StageClock clock;
      prompt = hv15::encode_prompt(*text, request.prompt, "prompt", options_.device, options_.dtype);
      if (g)
        negative = hv15::encode_prompt(*text, request.negative_prompt, "negative prompt", options_.device, options_.dtype);
      context_->synchronize();  // the encoders' device work belongs to this stage's time
      times.emplace_back("text encoding", clock.ms());
    };
    stages.denoise = [&](const Tensor& noise, Conditioning prompt, std::optional<Conditioning> negative,
                         GenerationReport& r) {
      const auto scheduler = load_scheduler(info_.scheduler_config, SchedulerOverrides{request.flow_shift});
      set_pipeline_sigmas(*scheduler, request.num_inference_steps);
      return denoise_stage(*scheduler, noise, std::move(prompt), std::move(negative), scale, memory, observer, r);
    };
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
                                       new_report(scale));
  }

 private:
  // The pipeline's sigmas, np.linspace(1.0, 0.0, steps + 1)[:-1], on its FlowMatchEulerDiscreteScheduler.
  void set_pipeline_sigmas(Scheduler& scheduler, int steps) const {
    auto* euler = dynamic_cast<FlowMatchEulerDiscreteScheduler*>(&scheduler);
    if (!euler) throw UserError(info_.scheduler_config + ": expected FlowMatchEulerDiscreteScheduler");
    std::vector<double> sigmas = sched::np_linspace(1.0, 0.0, steps + 1);
    sigmas.pop_back();
    euler->set_sigmas(sigmas);
  }
};

}  // namespace

std::unique_ptr<Pipeline> make_hv15_pipeline(const std::string& dir, const PipelineOptions& options) {
  return std::make_unique<Hv15Pipeline>(dir, options);
}

}  // namespace dattn
