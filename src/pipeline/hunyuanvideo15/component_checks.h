#pragma once
// What inspect_hv15_pipeline checks of a pipeline's parts, shared with make-pipeline, which checks its inputs
// the same way before it writes gigabytes (and names the user's files, not its own copies).
#include <cstdint>
#include <string>

#include "dattn/models/hunyuanvideo15/config.h"
#include "dattn/models/hunyuanvideo15_vae.h"

namespace dattn::hv15 {

// ClassifierFreeGuidance's guidance_scale when its config has none (diffusers' constructor default).
inline constexpr double kDiffusersGuidanceScale = 7.5;

struct GuiderSettings {
  bool enabled = true;
  double scale = kDiffusersGuidanceScale;
};

// guider_config.json (ClassifierFreeGuidance): whether guidance runs and its default scale; UserError naming
// `path` for a class, field or setting dattn does not run.
GuiderSettings read_guider(const std::string& path);
// The components fit together: channels of the transformer and the VAE, text widths of the two encoders,
// patch_size_t. UserError naming `where`.
void check_components(const HunyuanVideo15TransformerConfig& transformer, const HunyuanVideo15VaeConfig& vae,
                      std::int64_t qwen_width, std::int64_t byt5_width, const std::string& where);

}  // namespace dattn::hv15
