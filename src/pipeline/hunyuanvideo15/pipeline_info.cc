// inspect_hv15_pipeline: model_index.json and the component configs, checked before any weight is read.
#include <filesystem>

#include <nlohmann/json.hpp>

#include "dattn/core/error.h"
#include "dattn/io/weight_store.h"
#include "dattn/models/qwen2_5_vl.h"
#include "dattn/models/umt5.h"
#include "dattn/pipeline/hunyuanvideo15/hv15_pipeline.h"
#include "dattn/pipeline/scheduler.h"
#include "pipeline/common/model_index.h"
#include "pipeline/common/request_checks.h"

namespace dattn {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

void read_guider(const std::string& dir, Hv15PipelineInfo& info) {
  const std::string path = (fs::path(pipeline::require_dir(dir, "guider")) / "guider_config.json").string();
  pipeline::require_file(path);
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
  info.guider_scale = number("guidance_scale", 6.0);
  if (!(info.guider_scale >= 0 && info.guider_scale <= pipeline::kMaxGuidanceScale))
    throw UserError(path + ": 'guidance_scale' " + j.at("guidance_scale").dump() + " must be between 0 and 100");
  if (j.contains("enabled") && !j.at("enabled").is_null()) {
    if (!j.at("enabled").is_boolean())
      throw UserError(path + ": 'enabled' must be true or false, got " + j.at("enabled").dump());
    info.guider_enabled = j.at("enabled").get<bool>();
  }
}

}  // namespace

Hv15PipelineInfo inspect_hv15_pipeline(const std::string& dir) {
  const json index = pipeline::read_model_index(dir);
  const std::string source = dir + "/model_index.json";
  const std::string cls = pipeline::optional_string(index, "_class_name", source);
  if (cls != "HunyuanVideo15Pipeline")
    throw UserError(source + ": pipeline class is '" + cls + "'; expected HunyuanVideo15Pipeline (text to video)");
  using pipeline::component_class, pipeline::require_class;
  require_class(component_class(index, "transformer", source), {"HunyuanVideo15Transformer3DModel"}, "the transformer",
                source);
  require_class(component_class(index, "vae", source), {"AutoencoderKLHunyuanVideo15"}, "the VAE", source);
  require_class(component_class(index, "text_encoder", source), {"Qwen2_5_VLTextModel"}, "the text encoder", source);
  require_class(component_class(index, "text_encoder_2", source), {"T5EncoderModel"}, "the second text encoder",
                source);
  require_class(component_class(index, "tokenizer", source), {"Qwen2Tokenizer", "Qwen2TokenizerFast"}, "the tokenizer",
                source);
  require_class(component_class(index, "tokenizer_2", source), {"ByT5Tokenizer"}, "the second tokenizer", source);
  require_class(component_class(index, "scheduler", source), {"FlowMatchEulerDiscreteScheduler"}, "the scheduler",
                source);

  Hv15PipelineInfo info;
  info.dir = dir;
  info.transformer_dir = pipeline::require_dir(dir, "transformer");
  info.vae_dir = pipeline::require_dir(dir, "vae");
  info.text_encoder_dir = pipeline::require_dir(dir, "text_encoder");
  info.text_encoder_2_dir = pipeline::require_dir(dir, "text_encoder_2");
  info.tokenizer_dir = pipeline::require_dir(dir, "tokenizer");
  info.tokenizer_2_dir = pipeline::require_dir(dir, "tokenizer_2");
  info.scheduler_config = (fs::path(pipeline::require_dir(dir, "scheduler")) / "scheduler_config.json").string();
  pipeline::require_file(info.scheduler_config);
  pipeline::require_file((fs::path(info.tokenizer_dir) / "tokenizer.json").string());
  read_guider(dir, info);

  info.transformer = HunyuanVideo15TransformerConfig::load(info.transformer_dir);
  info.vae = HunyuanVideo15VaeConfig::from_json(read_component_config(info.vae_dir), info.vae_dir + "/config.json");
  info.num_train_timesteps = load_scheduler(info.scheduler_config)->num_train_timesteps();
  const std::int64_t qwen_width = Qwen25VLTextConfig::load(info.text_encoder_dir).hidden_size;
  const std::int64_t byt5_width = Umt5Config::load_t5_family(info.text_encoder_2_dir).d_model;

  const std::int64_t c = info.vae.latent_channels;
  if (info.transformer.out_channels != c)
    throw UserError(dir + ": the transformer predicts " + std::to_string(info.transformer.out_channels) +
                    " channels but the VAE's latent_channels is " + std::to_string(c));
  if (info.transformer.in_channels != 2 * c + 1)
    throw UserError(dir + ": the transformer takes " + std::to_string(info.transformer.in_channels) +
                    " channels; expected 2 x latent_channels + 1 = " + std::to_string(2 * c + 1) +
                    " (latents, conditioning latents, mask)");
  if (info.transformer.text_embed_dim != qwen_width)
    throw UserError(dir + ": the transformer's text_embed_dim is " + std::to_string(info.transformer.text_embed_dim) +
                    " but the text encoder's hidden_size is " + std::to_string(qwen_width));
  if (info.transformer.text_embed_2_dim != byt5_width)
    throw UserError(dir + ": the transformer's text_embed_2_dim is " + std::to_string(info.transformer.text_embed_2_dim) +
                    " but text_encoder_2's d_model is " + std::to_string(byt5_width));
  if (info.transformer.patch_size_t != 1)
    throw UserError(info.transformer_dir + "/config.json: patch_size_t " + std::to_string(info.transformer.patch_size_t) +
                    " is not supported by the pipeline (HunyuanVideo-1.5 uses 1)");
  return info;
}

}  // namespace dattn
