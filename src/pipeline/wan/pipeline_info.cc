// inspect_wan_pipeline: model_index.json and the component configs, checked before any weight is read.
#include <filesystem>

#include <nlohmann/json.hpp>

#include "dattn/core/error.h"
#include "dattn/io/weight_store.h"
#include "dattn/models/umt5.h"
#include "dattn/pipeline/scheduler.h"
#include "dattn/pipeline/wan/wan_pipeline.h"
#include "pipeline/common/model_index.h"

namespace dattn {
namespace {

using json = nlohmann::json;
using pipeline::component_class;
using pipeline::has_component;
using pipeline::read_model_index;
using pipeline::require_class;
using pipeline::require_dir;
using pipeline::require_file;

}  // namespace

WanPipelineInfo inspect_wan_pipeline(const std::string& dir) {
  const json index = read_model_index(dir);
  const std::string source = dir + "/model_index.json";
  const std::string cls = pipeline::optional_string(index, "_class_name", source);
  if (cls != "WanPipeline")
    throw UserError(source + ": pipeline class is '" + cls + "'; dattn generate runs WanPipeline (text to video)");
  // Wan2.2 A14B splits denoising between two experts at boundary_ratio; not implemented.
  if (has_component(index, "transformer_2"))
    throw UserError(source + ": a second transformer (transformer_2, Wan2.2 A14B) is not supported yet");
  if (index.contains("boundary_ratio") && !index.at("boundary_ratio").is_null())
    throw UserError(source + ": 'boundary_ratio' is set (two-expert denoising); not supported yet");

  require_class(component_class(index, "transformer", source), {"WanTransformer3DModel"}, "the transformer", source);
  require_class(component_class(index, "vae", source), {"AutoencoderKLWan"}, "the VAE", source);
  require_class(component_class(index, "text_encoder", source), {"UMT5EncoderModel"}, "the text encoder", source);
  require_class(component_class(index, "tokenizer", source), {"T5Tokenizer", "T5TokenizerFast", "AutoTokenizer"},
                "the tokenizer", source);

  WanPipelineInfo info;
  info.dir = dir;
  info.scheduler_class = component_class(index, "scheduler", source);
  require_class(info.scheduler_class, {"UniPCMultistepScheduler", "FlowMatchEulerDiscreteScheduler"}, "the scheduler",
                source);
  const json& expand = index.contains("expand_timesteps") ? index.at("expand_timesteps") : json(false);
  if (!expand.is_boolean() && !expand.is_null())
    throw UserError(source + ": 'expand_timesteps' must be true or false, got " + expand.dump());
  info.expand_timesteps = expand.is_boolean() && expand.get<bool>();

  info.transformer_dir = require_dir(dir, "transformer");
  info.vae_dir = require_dir(dir, "vae");
  info.text_encoder_dir = require_dir(dir, "text_encoder");
  info.tokenizer_dir = require_dir(dir, "tokenizer");
  info.scheduler_config = (std::filesystem::path(require_dir(dir, "scheduler")) / "scheduler_config.json").string();
  require_file(info.scheduler_config);
  require_file((std::filesystem::path(info.tokenizer_dir) / "spiece.model").string());

  info.transformer = WanTransformerConfig::load(info.transformer_dir);
  info.vae = WanVaeConfig::from_json(read_component_config(info.vae_dir), info.vae_dir + "/config.json");
  info.text_dim = Umt5Config::load(info.text_encoder_dir).d_model;
  // The scheduler config is read here too, so a bad one fails before any work; diffusers builds the class
  // model_index.json names, so a config of another class is a mismatch, not a choice.
  const auto scheduler = load_scheduler(info.scheduler_config);
  if (scheduler->name() != info.scheduler_class)
    throw UserError(info.scheduler_config + ": a " + scheduler->name() + " config, but " + source + " names " +
                    info.scheduler_class + " for the scheduler");
  info.num_train_timesteps = scheduler->num_train_timesteps();

  if (info.transformer.in_channels != info.vae.z_dim)
    throw UserError(dir + ": the transformer takes " + std::to_string(info.transformer.in_channels) +
                    " latent channels but the VAE's z_dim is " + std::to_string(info.vae.z_dim) +
                    " (an image-to-video transformer needs conditioning this pipeline does not give)");
  if (info.transformer.out_channels != info.vae.z_dim)
    throw UserError(dir + ": the transformer predicts " + std::to_string(info.transformer.out_channels) +
                    " channels but the VAE's z_dim is " + std::to_string(info.vae.z_dim));
  if (info.transformer.text_dim != info.text_dim)
    throw UserError(dir + ": the transformer's text_dim is " + std::to_string(info.transformer.text_dim) +
                    " but the text encoder's d_model is " + std::to_string(info.text_dim));
  return info;
}

}  // namespace dattn
