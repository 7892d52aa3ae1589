// inspect_wan_pipeline: model_index.json and the component configs, checked before any weight is read.
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "dattn/core/error.h"
#include "dattn/io/weight_store.h"
#include "dattn/models/umt5.h"
#include "dattn/pipeline/wan_t2v.h"

namespace dattn {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

json read_model_index(const std::string& dir) {
  const fs::path path = fs::path(dir) / "model_index.json";
  if (!fs::is_directory(dir)) throw UserError("--model '" + dir + "': no such directory");
  std::ifstream in(path);
  if (!in)
    throw UserError(path.string() + ": not found; --model must be a diffusers pipeline directory "
                                    "(model_index.json, transformer/, vae/, text_encoder/, tokenizer/, scheduler/)");
  json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) throw UserError(path.string() + ": not a JSON object");
  return j;
}

// model_index.json lists a component as ["library", "ClassName"] (or [null, null] when absent).
std::string component_class(const json& index, const std::string& name, const std::string& source) {
  if (!index.contains(name)) throw UserError(source + ": component '" + name + "' is missing");
  const json& c = index.at(name);
  if (!c.is_array() || c.size() != 2 || !c[1].is_string())
    throw UserError(source + ": component '" + name + "' must be [library, class], got " + c.dump());
  return c[1].get<std::string>();
}

void require_class(const std::string& got, const std::vector<std::string>& accepted, const std::string& what,
                   const std::string& source) {
  for (const auto& a : accepted)
    if (got == a) return;
  std::string list;
  for (const auto& a : accepted) list += (list.empty() ? "" : ", ") + a;
  throw UserError(source + ": " + what + " is " + got + "; supported: " + list);
}

std::string require_dir(const std::string& dir, const std::string& name) {
  const fs::path p = fs::path(dir) / name;
  if (!fs::is_directory(p)) throw UserError("--model '" + dir + "': component directory '" + name + "/' is missing");
  return p.string();
}

void require_file(const std::string& path) {
  if (!fs::is_regular_file(path)) throw UserError(path + ": not found");
}

}  // namespace

WanPipelineInfo inspect_wan_pipeline(const std::string& dir) {
  const json index = read_model_index(dir);
  const std::string source = dir + "/model_index.json";
  const std::string cls = index.value("_class_name", std::string());
  if (cls != "WanPipeline")
    throw UserError(source + ": pipeline class is '" + cls + "'; dattn generate runs WanPipeline (text to video)");
  // Wan2.2 A14B splits denoising between two experts at boundary_ratio; not implemented.
  if (index.contains("transformer_2") && index.at("transformer_2").is_array() &&
      !index.at("transformer_2").empty() && !index.at("transformer_2")[0].is_null())
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
  info.scheduler_config = (fs::path(require_dir(dir, "scheduler")) / "scheduler_config.json").string();
  require_file(info.scheduler_config);
  require_file((fs::path(info.tokenizer_dir) / "spiece.model").string());

  info.transformer = WanTransformerConfig::load(info.transformer_dir);
  info.vae = WanVaeConfig::from_json(read_component_config(info.vae_dir), info.vae_dir + "/config.json");
  info.text_dim = Umt5Config::load(info.text_encoder_dir).d_model;
  // The scheduler config is read here too, so a bad one fails before any work.
  (void)load_scheduler(info.scheduler_config);

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
