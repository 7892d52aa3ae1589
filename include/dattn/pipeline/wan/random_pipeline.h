#pragma once
// A complete diffusers WanPipeline directory with random weights (`dattn make-pipeline`), so the whole
// text-to-video path can run without downloading anything: the transformer as `dattn make-checkpoint`
// writes it, a decode-only VAE, a umT5 encoder, and a copied tokenizer and scheduler config.
#include <cstdint>
#include <string>

#include "dattn/core/dtype.h"

namespace dattn {

struct RandomWanPipelineSpec {
  std::string transformer_config;   // WanTransformer3DModel config.json
  std::string vae_config;           // AutoencoderKLWan config.json
  std::string text_encoder_config;  // UMT5 config.json (vocab_size must cover the tokenizer)
  std::string tokenizer_dir;        // spiece.model + tokenizer_config.json, copied
  std::string scheduler_config;     // scheduler_config.json, copied
  bool expand_timesteps = true;     // model_index.json's flag (Wan2.2 TI2V: true)
  DType dtype = DType::F32;         // of the transformer's weights
  DType text_encoder_dtype = DType::F32;  // of the umT5's weights: fp32 or bf16 (umT5-XXL: bf16, 11.4 GB)
  std::uint64_t seed = 0;
};

// Writes `out_dir` (which must not exist or be empty). Throws UserError naming what is wrong; the
// result is checked with inspect_wan_pipeline before returning.
void write_random_wan_pipeline(const std::string& out_dir, const RandomWanPipelineSpec& spec);

}  // namespace dattn
