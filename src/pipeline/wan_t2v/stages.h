#pragma once
// The stages of generate_wan_t2v, one file each. Each stage loads its component, runs it and lets it
// go when it returns, so only one model is in memory at a time.
#include <vector>

#include "dattn/pipeline/wan_t2v.h"

namespace dattn::wan_t2v {

// Adds "load X" / "X" stage times to a result as a stage runs.
using StageTimes = std::vector<std::pair<std::string, double>>;

struct TextEmbeddings {
  Tensor prompt;    // [1, L, text_dim]
  Tensor negative;  // undefined without guidance
};

// Tokenizer + umT5: diffusers' _get_t5_prompt_embeds for the prompt and (with guidance) the negative.
TextEmbeddings encode_text(const WanPipelineInfo& info, const WanT2VRequest& request, bool guidance,
                           const WanRunSettings& settings, StageTimes& times);

// The denoising loop from `latents` (float32, CPU); returns the final latents (float32, CPU).
Tensor denoise(const WanPipelineInfo& info, const WanT2VRequest& request, const TextEmbeddings& text,
               Tensor latents, const WanRunSettings& settings, const WanT2VObserver& observer,
               std::vector<Resolution>& attention, StageTimes& times);

// De-normalised latents through the VAE, then diffusers' postprocess: frames [F, H, W, 3] in [0, 1].
Tensor decode_video(const WanPipelineInfo& info, const Tensor& latents, const WanRunSettings& settings,
                    StageTimes& times);

// The backend each role of the Wan transformer resolves to under `settings`.
std::vector<Resolution> wan_attention_resolutions(const WanTransformerConfig& config, const WanRunSettings& settings);

}  // namespace dattn::wan_t2v
