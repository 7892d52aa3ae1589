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
#include "pipeline/common/decoded_frames.h"
#include "pipeline/common/text_output_check.h"
#include "pipeline/common/text_to_video_pipeline.h"
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

using WanBase = pipeline::TextToVideoPipeline<WanPipelineInfo, TextEncoder, WanTransformer, WanVae>;

class WanPipeline final : public WanBase {
 public:
  WanPipeline(const std::string& dir, const PipelineOptions& options)
      : WanBase(inspect_wan_pipeline(dir), "WanPipeline", options) {
    check_parallel_setup(info_.transformer.num_attention_heads, info_.transformer.ffn_dim);
    text_ = ComponentSlot<TextEncoder>("text encoder", options.residency, options.device, [this] {
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
    vae_ = ComponentSlot<WanVae>("vae", options.residency, options.device, [this] {
      // fp32 (diffusers runs this VAE in fp32; on CUDA the convolutions use TF32 tensor cores, as
      // PyTorch's do by default), or bf16 for a bf16 run on CUDA (pipeline_vae_dtype).
      return std::make_unique<WanVae>(WanVae::load(info_.vae_dir, options_.device, vae_dtype_));
    }, pipeline::warm_up_vae_on_cuda<WanVae>);
    finish_setup(pipeline::resolve_roles(options_.attention, wan_attention_roles(info_.transformer, options_.dtype),
                                         model_, options_.device));
  }

  // WanPipeline.__call__'s guidance_scale=5.0.
  double default_guidance_scale() const override { return 5.0; }

  void check(const GenerationRequest& request) const override {
    check_wan_request(info_, request);
    const double scale = request.guidance_scale.value_or(default_guidance_scale());
    const Shape latents = latent_shape(request);
    const auto& patch = info_.transformer.patch_size;
    check_run(scale > 1.0, scale, latents[2] / patch[0] * (latents[3] / patch[1]) * (latents[4] / patch[2]),
              wan_request_memory(info_, request, options_));
  }
  Shape latent_shape(const GenerationRequest& request) const override { return wan_latent_shape(info_, request); }

  GenerationResult run(const GenerationRequest& request, const ProgressObserver& observer) override {
    check(request);
    const ContextScope bound(*context_);
    const double scale = request.guidance_scale.value_or(default_guidance_scale());
    const bool guidance = scale > 1.0;  // diffusers' do_classifier_free_guidance
    const auto memory = wan_request_memory(info_, request, options_);
    pipeline::FamilyStages stages;
    stages.encode = [&](bool g, Conditioning& prompt, std::optional<Conditioning>& negative, StageTimes& times) {
      encode_text(request, g, prompt, negative, memory, times);
    };
    stages.denoise = [&](const Tensor& noise, Conditioning prompt, std::optional<Conditioning> negative,
                         GenerationReport& r) {
      const auto scheduler = load_scheduler(info_.scheduler_config, SchedulerOverrides{request.flow_shift});
      scheduler->set_timesteps(request.num_inference_steps);
      return denoise_stage(*scheduler, noise, std::move(prompt), std::move(negative), scale, memory, observer, r);
    };
    stages.decode = [&](const Tensor& latents, GenerationReport& r) { return decode(latents, observer, r); };
    return pipeline::run_family_stages(stages, request, guidance, latent_shape(request), *context_, observer,
                                       new_report(scale));
  }

 private:
  // Tokenizer + umT5: diffusers' _get_t5_prompt_embeds for the prompt and (with guidance) the negative,
  // one prompt per encoder call as diffusers does, in the transformer's dtype on its device.
  void encode_text(const GenerationRequest& request, bool guidance, Conditioning& prompt,
                   std::optional<Conditioning>& negative, const std::vector<pipeline::StageNeed>& memory,
                   StageTimes& times) {
    auto text = acquire_text(times, memory);
    StageClock clock;
    const int length = request.max_sequence_length.value_or(kWanDefaultMaxSequenceLength);
    auto embed = [&](const std::string& s, const char* kind) {
      const Tensor e = encode_prompt(text->encoder, text->tokenizer.encode({clean_prompt(s)}, length));
      // Converted once here, not in every forward (umT5 runs in fp32 for an fp16 transformer).
      Conditioning c;
      c.tensors[kWanTextInput] = e.to(options_.device).to(options_.dtype);
      pipeline::check_text_embeddings(c.tensors[kWanTextInput], "the text encoder (umT5, text_encoder/)", kind);
      return c;
    };
    prompt = embed(request.prompt, "prompt");
    if (guidance) negative = embed(request.negative_prompt, "negative prompt");
    // CUDA work is asynchronous: wait for it so its time is this stage's, not the next one's.
    context_->synchronize();
    times.emplace_back("text encoding", clock.ms());
    // PerStage: the encoder (umT5-XXL: 11 GiB in bf16) is released when `text` goes, before the
    // transformer is loaded; only the embeddings stay.
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
};

}  // namespace

std::unique_ptr<Pipeline> make_wan_pipeline(const std::string& dir, const PipelineOptions& options) {
  return std::make_unique<WanPipeline>(dir, options);
}

}  // namespace dattn
