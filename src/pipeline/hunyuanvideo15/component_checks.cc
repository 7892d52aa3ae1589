// The checks inspect_hv15_pipeline and make-pipeline share (see component_checks.h).
#include "pipeline/hunyuanvideo15/component_checks.h"

#include <nlohmann/json.hpp>

#include "dattn/core/error.h"
#include "pipeline/common/model_index.h"
#include "pipeline/common/request_checks.h"

namespace dattn::hv15 {

using json = nlohmann::json;

GuiderSettings read_guider(const std::string& path) {
  GuiderSettings g;
  const json j = pipeline::read_json_object_file(path);
  const std::string cls = pipeline::optional_string(j, "_class_name", path);
  if (cls != "ClassifierFreeGuidance")
    throw UserError(path + ": guider class is '" + cls + "'; dattn runs ClassifierFreeGuidance");
  const auto number = [&](const char* key, double fallback) {
    if (!j.contains(key) || j.at(key).is_null()) return fallback;
    if (!j.at(key).is_number()) throw UserError(path + ": '" + key + "' must be a number, got " + j.at(key).dump());
    return j.at(key).get<double>();
  };
  // What dattn's guidance does not implement changes the result: refuse it rather than ignore it.
  if (number("guidance_rescale", 0.0) != 0.0)
    throw UserError(path + ": 'guidance_rescale' is set; dattn's guidance implements guidance_rescale 0 only");
  if (number("start", 0.0) != 0.0 || number("stop", 1.0) != 1.0)
    throw UserError(path + ": 'start'/'stop' limit guidance to part of the schedule; dattn guides every step");
  if (j.contains("use_original_formulation") && !j.at("use_original_formulation").is_null()) {
    const json& v = j.at("use_original_formulation");
    if (!v.is_boolean()) throw UserError(path + ": 'use_original_formulation' must be true or false, got " + v.dump());
    if (v.get<bool>()) throw UserError(path + ": 'use_original_formulation' true is not implemented");
  }
  // Absent: ClassifierFreeGuidance's own default, 7.5 (diffusers src/diffusers/guiders/classifier_free_guidance.py:83,
  // `guidance_scale: float = 7.5`); the pipeline's __call__ takes no guidance_scale. The released configs say 6.0.
  g.scale = number("guidance_scale", kDiffusersGuidanceScale);
  if (!(g.scale >= 0 && g.scale <= pipeline::kMaxGuidanceScale))
    throw UserError(path + ": 'guidance_scale' " + j.at("guidance_scale").dump() + " must be between 0 and 100");
  if (j.contains("enabled") && !j.at("enabled").is_null()) {
    if (!j.at("enabled").is_boolean())
      throw UserError(path + ": 'enabled' must be true or false, got " + j.at("enabled").dump());
    g.enabled = j.at("enabled").get<bool>();
  }
  return g;
}

void check_components(const HunyuanVideo15TransformerConfig& transformer, const HunyuanVideo15VaeConfig& vae,
                      std::int64_t qwen_width, std::int64_t byt5_width, const std::string& where) {
  const std::int64_t c = vae.latent_channels;
  if (transformer.out_channels != c)
    throw UserError(where + ": the transformer predicts " + std::to_string(transformer.out_channels) +
                    " channels but the VAE's latent_channels is " + std::to_string(c));
  if (transformer.in_channels != 2 * c + 1)
    throw UserError(where + ": the transformer takes " + std::to_string(transformer.in_channels) +
                    " channels; expected 2 x latent_channels + 1 = " + std::to_string(2 * c + 1) +
                    " (latents, conditioning latents, mask)");
  if (transformer.text_embed_dim != qwen_width)
    throw UserError(where + ": the transformer's text_embed_dim is " + std::to_string(transformer.text_embed_dim) +
                    " but the text encoder's hidden_size is " + std::to_string(qwen_width));
  if (transformer.text_embed_2_dim != byt5_width)
    throw UserError(where + ": the transformer's text_embed_2_dim is " + std::to_string(transformer.text_embed_2_dim) +
                    " but text_encoder_2's d_model is " + std::to_string(byt5_width));
  if (transformer.patch_size_t != 1)
    throw UserError(where + ": the transformer's patch_size_t " + std::to_string(transformer.patch_size_t) +
                    " is not supported by the pipeline (HunyuanVideo-1.5 uses 1)");
}

}  // namespace dattn::hv15
