// WanPipeline: the Wan family's adapter to the shared pipeline (see wan_pipeline.h). Its own logic is
// the text step (umT5 embeddings, zero-filled past each prompt's length), how the transformer is
// conditioned, and the VAE decode with diffusers' postprocess; the denoise loop is the shared one.
#include "dattn/pipeline/wan/wan_pipeline.h"

#include <memory>
#include <optional>

#include "dattn/core/error.h"
#include "dattn/core/run_context.h"
#include "dattn/models/attention_roles.h"
#include "dattn/models/umt5.h"
#include "dattn/models/wan/transformer.h"
#include "dattn/pipeline/scheduler.h"
#include "dattn/pipeline/wan/prompt_embeds.h"
#include "dattn/text/prompt_clean.h"
#include "dattn/text/tokenizer.h"
#include "pipeline/common/component_slot.h"
#include "pipeline/common/decoded_frames.h"
#include "pipeline/common/library_warmup.h"
#include "pipeline/common/load_ahead.h"
#include "pipeline/common/denoise_loop.h"
#include "pipeline/common/family_run.h"
#include "pipeline/common/parallel_checks.h"
#include "pipeline/common/stage_clock.h"
#include "pipeline/wan/request_memory.h"

namespace dattn {
namespace {

using pipeline::ComponentSlot;
using pipeline::StageClock;
using pipeline::StageTimes;

struct TextEncoder {
  T5Tokenizer tokenizer;
  Umt5Encoder encoder;
};

class WanPipeline final : public Pipeline {
 public:
  WanPipeline(const std::string& dir, const PipelineOptions& options)
      : info_(inspect_wan_pipeline(dir)),
        options_(options),
        class_name_("WanPipeline"),
        context_(RunContext::create(options.device, options.device_index)),
        loader_(*context_) {
    // Sequential by default: on the H200 at Wan2.2-5B size both strategies step in the same time (524.2
    // vs 524.7 ms) and sequential holds ~1 GiB less (bench/results/2026-12-01-h200-pipeline-step.md).
    guidance_mode_ = options.guidance.value_or(GuidanceMode::Sequential);
    pipeline::check_parallel_degrees(options, guidance_mode_, info_.transformer.num_attention_heads,
                                     "WanPipeline's transformer", true, true);
    pipeline::check_tensor_parallel_split(options, info_.transformer.num_attention_heads, info_.transformer.ffn_dim,
                                          "WanPipeline's transformer");
    (void)make_guidance(guidance_mode_, options.parallel.cfg);  // an unavailable strategy fails here
    libraries_ = pipeline::prepare_libraries_in_background(context_);  // beside the loads below
    text_encoder_ = ComponentSlot<TextEncoder>("text encoder", options.residency, options.device, [this] {
      // umT5 takes fp32 or bf16 (fp16 overflows in its feed-forwards): bf16 runs stay bf16, others fp32.
      const Umt5RunOptions o{options_.device, options_.dtype == DType::BF16 ? DType::BF16 : DType::F32};
      return std::make_unique<TextEncoder>(
          TextEncoder{T5Tokenizer::load(info_.tokenizer_dir), Umt5Encoder::load(info_.text_encoder_dir, o)});
    });
    transformer_ = ComponentSlot<WanTransformer>("transformer", options.residency, options.device, [this] {
      WanRunOptions o{options_.device, options_.dtype, options_.attention, info_.expand_timesteps,
                      options_.parallel.ulysses, options_.parallel.tensor_parallel};
      o.quantization = options_.quantization;
      return std::make_unique<WanTransformer>(WanTransformer::load(info_.transformer_dir, o));
    });
    vae_dtype_ = pipeline_vae_dtype(options_);  // checked here, before any weight is read
    vae_ = ComponentSlot<WanVae>("vae", options.residency, options.device, [this] {
      // fp32 (diffusers runs this VAE in fp32; on CUDA the convolutions use TF32 tensor cores, as
      // PyTorch's do by default), or bf16 for a bf16 run on CUDA (pipeline_vae_dtype).
      return std::make_unique<WanVae>(WanVae::load(info_.vae_dir, options_.device, vae_dtype_));
    }, pipeline::warm_up_vae_on_cuda<WanVae>);
    // The attention roles resolve (and an explicit backend that cannot run them fails) before any weight
    // is read: the blocks of a loaded transformer resolve the same way.
    attention_ = wan_attention_resolutions(info_.transformer, options_);
    if (options_.residency == Residency::Resident) {
      const ContextScope bound(*context_);  // the weights are allocated on the pipeline's context
      StageTimes ignored;
      text_encoder_.acquire(ignored);
      transformer_.acquire(ignored);
      vae_.acquire(ignored);
    }
  }

  const std::string& class_name() const override { return class_name_; }
  const std::string& model_dir() const override { return info_.dir; }
  const PipelineOptions& options() const override { return options_; }
  RunContext& context() const override { return *context_; }
  std::vector<Resolution> attention() const override { return attention_; }
  // WanPipeline.__call__'s guidance_scale=5.0.
  double default_guidance_scale() const override { return 5.0; }

  void check(const GenerationRequest& request) const override {
    check_wan_request(info_, request);
    const double scale = request.guidance_scale.value_or(default_guidance_scale());
    pipeline::check_cfg_parallel_request(guidance_mode_, scale > 1.0, scale);
    const Shape latents = latent_shape(request);
    const auto& patch = info_.transformer.patch_size;
    pipeline::check_ulysses_tokens(options_, latents[2] / patch[0] * (latents[3] / patch[1]) * (latents[4] / patch[2]));
    const ContextScope bound(*context_);  // the device whose free memory counts
    pipeline::check_memory_fits(wan_request_memory(info_, request, options_),
                                "try a smaller --height/--width or fewer --num-frames");
  }
  Shape latent_shape(const GenerationRequest& request) const override { return wan_latent_shape(info_, request); }

  GenerationResult run(const GenerationRequest& request, const ProgressObserver& observer) override {
    check(request);
    const ContextScope bound(*context_);
    const double scale = request.guidance_scale.value_or(default_guidance_scale());
    const bool guidance = scale > 1.0;  // diffusers' do_classifier_free_guidance
    GenerationReport report;
    report.guidance_scale = scale;
    report.guidance = guidance_mode_;
    report.attention = attention_;
    pipeline::FamilyStages stages;
    stages.encode = [&](bool g, Conditioning& prompt, std::optional<Conditioning>& negative, StageTimes& times) {
      encode_text(request, g, prompt, negative, times);
    };
    stages.denoise = [&](const Tensor& noise, Conditioning prompt, std::optional<Conditioning> negative,
                         GenerationReport& r) { return denoise(request, noise, std::move(prompt), std::move(negative), observer, r); };
    stages.decode = [&](const Tensor& latents, GenerationReport& r) { return decode(latents, observer, r); };
    return pipeline::run_family_stages(stages, request, guidance, latent_shape(request), *context_, observer,
                                       std::move(report));
  }

 private:
  // Tokenizer + umT5: diffusers' _get_t5_prompt_embeds for the prompt and (with guidance) the negative,
  // one prompt per encoder call as diffusers does, in the transformer's dtype on its device.
  void encode_text(const GenerationRequest& request, bool guidance, Conditioning& prompt,
                   std::optional<Conditioning>& negative, StageTimes& times) {
    auto text = text_encoder_.acquire(times);
    // After the encoder's load, not beside it: two loads at once share the host's copies and were slower
    // together than one after the other (bench/notes/loading.md).
    if (pipeline::transformer_loads_beside_text(options_, wan_request_memory(info_, request, options_)))
      transformer_.load_ahead(loader_.get(), context_);
    StageClock clock;
    const int length = request.max_sequence_length.value_or(kWanDefaultMaxSequenceLength);
    auto embed = [&](const std::string& s) {
      const Tensor e = encode_prompt(text->encoder, text->tokenizer.encode({clean_prompt(s)}, length));
      // Converted once here, not in every forward (umT5 runs in fp32 for an fp16 transformer).
      Conditioning c;
      c.tensors[kWanTextInput] = e.to(options_.device).to(options_.dtype);
      return c;
    };
    prompt = embed(request.prompt);
    if (guidance) negative = embed(request.negative_prompt);
    // CUDA work is asynchronous: wait for it so its time is this stage's, not the next one's.
    context_->synchronize();
    times.emplace_back("text encoding", clock.ms());
    // PerStage: the encoder (umT5-XXL: 11 GiB in bf16) is released when `text` goes, before the
    // transformer is loaded; only the embeddings stay.
  }

  Tensor denoise(const GenerationRequest& request, const Tensor& noise, Conditioning prompt,
                 std::optional<Conditioning> negative, const ProgressObserver& observer, GenerationReport& report) {
    const auto scheduler = load_scheduler(info_.scheduler_config, SchedulerOverrides{request.flow_shift});
    scheduler->set_timesteps(request.num_inference_steps);
    auto model = transformer_.acquire(report.stage_ms, &report.loaded_ahead_ms);
    report.attention = model->attention_resolutions();
    if (pipeline::vae_loads_beside_denoising(options_, wan_request_memory(info_, request, options_))) vae_.load_ahead(loader_.get(), context_);
    StageClock clock;
    const auto guidance = make_guidance(guidance_mode_, options_.parallel.cfg);
    pipeline::DenoiseInputs inputs{latents_on_run_device(noise), std::move(prompt), std::move(negative),
                                   request.guidance_scale.value_or(default_guidance_scale())};
    Tensor latents = pipeline::denoise(*model, *scheduler, *guidance, std::move(inputs), observer, *context_,
                                       report.step_ms);
    report.stage_ms.emplace_back("denoising", clock.ms());
    return latents;
  }

  // De-normalised latents (host, float32) through the VAE, then diffusers' postprocess: frames
  // [F, H, W, 3] in [0, 1].
  // The frames go to the observer as each latent frame's output is decoded (a writer encodes them while
  // the rest decodes).
  Tensor decode(const Tensor& latents, const ProgressObserver& observer, GenerationReport& report) {
    StageTimes& times = report.stage_ms;
    auto vae = vae_.acquire(times, &report.loaded_ahead_ms);
    StageClock clock;
    pipeline::DecodedFrames frames(observer.on_frames);
    const Tensor decoded = vae->decode(denormalize_latents(latents, vae->config()),
                                       [&](const Tensor& video, std::int64_t, std::int64_t done) { frames.ready(video, done); });
    Tensor rgb = frames.finish(decoded);
    times.emplace_back("vae decode", clock.ms());
    return rgb;
  }

  // The initial latents as float32 on the run device.
  Tensor latents_on_run_device(const Tensor& noise) const { return noise.to(DType::F32).to(options_.device); }

  // What the transformer's layers will resolve to: the same declarations (roles, nominal shapes) the
  // Wan blocks resolve from when they are built.
  static std::vector<Resolution> wan_attention_resolutions(const WanTransformerConfig& config,
                                                           const PipelineOptions& options) {
    std::vector<Resolution> out;
    check_per_role_keys(options.attention.config, wan_attention_roles(config, options.dtype), "WanPipeline's transformer");
    for (const AttentionRoleDecl& role : wan_attention_roles(config, options.dtype))
      out.push_back(resolve_attention(options.attention, role.role, role.category, role.nominal, options.device));
    return out;
  }

  WanPipelineInfo info_;
  PipelineOptions options_;
  std::string class_name_;
  GuidanceMode guidance_mode_ = GuidanceMode::Sequential;
  std::vector<Resolution> attention_;
  std::shared_ptr<RunContext> context_;
  ComponentSlot<TextEncoder> text_encoder_;
  ComponentSlot<WanTransformer> transformer_;
  ComponentSlot<WanVae> vae_;
  pipeline::LoadAheadContext loader_;  // where loads ahead run (made on first use)
  DType vae_dtype_ = DType::F32;
  pipeline::JoiningThread libraries_;  // last: joined before anything it runs beside is destroyed
};

}  // namespace

std::unique_ptr<Pipeline> make_wan_pipeline(const std::string& dir, const PipelineOptions& options) {
  return std::make_unique<WanPipeline>(dir, options);
}

}  // namespace dattn
