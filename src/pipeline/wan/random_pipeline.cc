// write_random_wan_pipeline: a WanPipeline directory with random weights (see the header).
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "dattn/core/error.h"
#include "dattn/core/files.h"
#include "dattn/io/weight_store.h"
#include "dattn/models/random_checkpoint.h"
#include "dattn/models/umt5_random.h"
#include "dattn/models/wan_vae.h"
#include "dattn/pipeline/wan/random_pipeline.h"
#include "dattn/pipeline/wan/wan_pipeline.h"
#include "dattn/text/tokenizer.h"

namespace dattn {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

json read_json_file(const std::string& path) {
  refuse_special_file(path, "config");
  std::ifstream in(path);
  if (!in) throw UserError(path + ": cannot read");
  json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) throw UserError(path + ": not a JSON object");
  return j;
}

void write_json_file(const fs::path& path, const json& j) {
  std::ofstream out(path);
  out << j.dump(2) << "\n";
  if (!out) throw UserError("cannot write '" + path.string() + "'");
}

void copy_into(const fs::path& from, const fs::path& to) {
  require_regular_file(from.string(), "file to copy");
  std::error_code ec;
  fs::create_directories(to.parent_path(), ec);
  if (!ec) fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec) throw UserError("cannot copy '" + from.string() + "' to '" + to.string() + "': " + ec.message());
}

// model_index.json as diffusers' save_pretrained writes it for WanPipeline.
json model_index(const std::string& scheduler_class, bool expand_timesteps) {
  return {{"_class_name", "WanPipeline"},
          {"_diffusers_version", "0.40.0.dev0"},
          {"boundary_ratio", nullptr},
          {"expand_timesteps", expand_timesteps},
          {"scheduler", {"diffusers", scheduler_class}},
          {"text_encoder", {"transformers", "UMT5EncoderModel"}},
          {"tokenizer", {"transformers", "T5Tokenizer"}},
          {"transformer", {"diffusers", "WanTransformer3DModel"}},
          {"transformer_2", {nullptr, nullptr}},
          {"vae", {"diffusers", "AutoencoderKLWan"}}};
}

}  // namespace

void write_random_wan_pipeline(const std::string& out_dir, const RandomWanPipelineSpec& spec) {
  const fs::path out(out_dir);
  if (fs::exists(out) && !(fs::is_directory(out) && fs::is_empty(out)))
    throw UserError("--out '" + out_dir + "' exists and is not an empty directory");
  // Check every input before writing anything.
  const json scheduler = read_json_file(spec.scheduler_config);
  const Umt5Config text_config = Umt5Config::from_json(read_json_file(spec.text_encoder_config), spec.text_encoder_config);
  const WanVaeConfig vae_config = WanVaeConfig::from_json(read_json_file(spec.vae_config), spec.vae_config);
  const T5Tokenizer tokenizer = T5Tokenizer::load(spec.tokenizer_dir);
  if (text_config.vocab_size < tokenizer.vocab_size())
    throw UserError(spec.text_encoder_config + ": vocab_size " + std::to_string(text_config.vocab_size) +
                    " is smaller than the tokenizer's " + std::to_string(tokenizer.vocab_size()));
  if (spec.text_encoder_dtype != DType::F32 && spec.text_encoder_dtype != DType::BF16)
    throw UserError("text encoder dtype " + std::string(dtype_name(spec.text_encoder_dtype)) + ": expected fp32 or bf16");
  // The components must fit together; checked here too so a mismatch fails before gigabytes are written
  // (inspect_wan_pipeline checks the written directory again at the end).
  const WanTransformerConfig transformer_config =
      WanTransformerConfig::from_json(read_json_file(spec.transformer_config), spec.transformer_config);
  if (transformer_config.text_dim != text_config.d_model)
    throw UserError(spec.transformer_config + ": text_dim " + std::to_string(transformer_config.text_dim) +
                    " differs from the text encoder's d_model " + std::to_string(text_config.d_model) + " (" +
                    spec.text_encoder_config + ")");
  if (transformer_config.in_channels != vae_config.z_dim || transformer_config.out_channels != vae_config.z_dim)
    throw UserError(spec.transformer_config + ": in_channels / out_channels " +
                    std::to_string(transformer_config.in_channels) + " / " +
                    std::to_string(transformer_config.out_channels) + " differ from the VAE's z_dim " +
                    std::to_string(vae_config.z_dim) + " (" + spec.vae_config + ")");

  OutputDirectory output(out_dir, "--out");  // a failed component removes the whole pipeline
  RandomCheckpointOptions transformer_options;
  transformer_options.dtype = spec.dtype;
  transformer_options.seed = spec.seed;
  write_random_checkpoint(spec.transformer_config, (out / "transformer").string(), transformer_options);
  write_random_wan_vae_decoder((out / "vae").string(), vae_config, spec.seed + 1);
  RandomUmt5Options text_options;
  text_options.dtype = spec.text_encoder_dtype;
  write_random_umt5_encoder((out / "text_encoder").string(), text_config, spec.seed + 2, text_options);
  for (const char* name : {"spiece.model", "tokenizer_config.json"})
    copy_into(fs::path(spec.tokenizer_dir) / name, out / "tokenizer" / name);
  copy_into(spec.scheduler_config, out / "scheduler" / "scheduler_config.json");
  write_json_file(out / "model_index.json",
                  model_index(scheduler.value("_class_name", std::string()), spec.expand_timesteps));
  (void)inspect_wan_pipeline(out_dir);  // the components must fit together (channels, text width)
  output.commit();
}

}  // namespace dattn
