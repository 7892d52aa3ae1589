#pragma once
// The HunyuanVideo-1.5 family's pipeline (diffusers HunyuanVideo15Pipeline, text to video): prompt ->
// Qwen2.5-VL embeddings (chat template, the template prefix cropped) and ByT5 embeddings of the quoted
// glyph text -> the shared denoise loop (HunyuanVideo15Transformer as the Denoiser, FlowMatchEuler over
// the pipeline's sigmas, classifier-free guidance as the guider config says) -> latents / scaling_factor
// -> HunyuanVideo-1.5 VAE decode -> frames [F, H, W, 3] in [0, 1].
#include <cstdint>
#include <memory>
#include <string>

#include "dattn/models/hunyuanvideo15/config.h"
#include "dattn/models/hunyuanvideo15_vae.h"
#include "dattn/pipeline/pipeline.h"

namespace dattn {

// What model_index.json and the component configs say, checked before any weight is read.
struct Hv15PipelineInfo {
  std::string dir;
  std::string transformer_dir, vae_dir, text_encoder_dir, text_encoder_2_dir, tokenizer_dir, tokenizer_2_dir;
  std::string scheduler_config;
  int num_train_timesteps = 1000;
  HunyuanVideo15TransformerConfig transformer;
  HunyuanVideo15VaeConfig vae;
  // guider/guider_config.json (ClassifierFreeGuidance): whether guidance runs at all and its default scale.
  bool guider_enabled = true;
  double guider_scale = 7.5;  // ClassifierFreeGuidance's default when its config has none

  std::int64_t spatial_multiple() const { return vae.spatial_compression_ratio * transformer.patch_size; }
};

// Throws UserError naming the file and what is wrong: a class other than HunyuanVideo15Pipeline, a
// missing component or file, a component of a class dattn does not run, configs that disagree.
Hv15PipelineInfo inspect_hv15_pipeline(const std::string& dir);

// diffusers' tokenizer_max_length and tokenizer_2_max_length for this pipeline.
inline constexpr int kHv15QwenTokens = 1000;
inline constexpr int kHv15ByT5Tokens = 256;

// Height and width positive multiples of 16 (VAE x patch), frames 4k+1, steps, guidance, flow shift and
// initial latents as for every family.
void check_hv15_request(const Hv15PipelineInfo& info, const GenerationRequest& request);
// [1, latent_channels, (F - 1) / 4 + 1, H / 16, W / 16].
Shape hv15_latent_shape(const Hv15PipelineInfo& info, const GenerationRequest& request);

// The family's entry in the pipeline registry (src/pipeline/registry.cc).
std::unique_ptr<Pipeline> make_hv15_pipeline(const std::string& dir, const PipelineOptions& options);

}  // namespace dattn
