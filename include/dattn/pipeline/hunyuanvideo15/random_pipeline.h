#pragma once
// A complete diffusers HunyuanVideo15Pipeline directory with random weights (`dattn make-pipeline` with
// a HunyuanVideo15Transformer3DModel config), so the whole text-to-video path runs at full size without
// downloading anything: the transformer, the decode-only VAE and both text encoders as `dattn
// make-checkpoint` writes them, and copied tokenizers, scheduler and guider configs.
#include <cstdint>
#include <string>

#include "dattn/core/dtype.h"

namespace dattn {

struct RandomHv15PipelineSpec {
  std::string transformer_config;     // HunyuanVideo15Transformer3DModel config.json
  std::string vae_config;             // AutoencoderKLHunyuanVideo15 config.json
  std::string text_encoder_config;    // Qwen2_5_VLTextModel config.json (vocab_size must cover the tokenizer)
  std::string text_encoder_2_config;  // T5EncoderModel (ByT5) config.json
  std::string tokenizer_dir;          // Qwen2 tokenizer folder, copied
  std::string tokenizer_2_dir;        // ByT5 tokenizer folder, copied
  std::string scheduler_config;       // FlowMatchEulerDiscreteScheduler scheduler_config.json, copied
  std::string guider_config;          // ClassifierFreeGuidance guider_config.json, copied
  DType dtype = DType::BF16;          // of the transformer's and the Qwen text model's weights
  std::uint64_t seed = 0;
};

// Writes `out_dir` (which must not exist or be empty); the result is checked with inspect_hv15_pipeline.
// Throws UserError naming what is wrong.
void write_random_hv15_pipeline(const std::string& out_dir, const RandomHv15PipelineSpec& spec);

}  // namespace dattn
