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
#include "dattn/pipeline/scheduler.h"
#include "dattn/pipeline/wan/wan_pipeline.h"
#include "dattn/text/tokenizer.h"
#include "pipeline/common/model_index.h"

namespace dattn {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

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
  std::error_code ec;  // the non-throwing forms: a link loop is the user's path, not dattn's failure
  if (fs::exists(out, ec) && !(fs::is_directory(out, ec) && fs::is_empty(out, ec)))
    throw UserError("--out '" + out_dir + "' exists and is not an empty directory");
  // Check every input before writing anything.
  const json scheduler = pipeline::read_json_object_file(spec.scheduler_config);
  (void)load_scheduler(spec.scheduler_config);  // its class and fields, as the written folder's are checked
  const Umt5Config text_config = Umt5Config::from_json(pipeline::read_json_object_file(spec.text_encoder_config), spec.text_encoder_config);
  const WanVaeConfig vae_config = WanVaeConfig::from_json(pipeline::read_json_object_file(spec.vae_config), spec.vae_config);
  const T5Tokenizer tokenizer = T5Tokenizer::load(spec.tokenizer_dir);
  if (text_config.vocab_size < tokenizer.vocab_size())
    throw UserError(spec.text_encoder_config + ": vocab_size " + std::to_string(text_config.vocab_size) +
                    " is smaller than the tokenizer's " + std::to_string(tokenizer.vocab_size()));
  if (spec.text_encoder_dtype != DType::F32 && spec.text_encoder_dtype != DType::BF16)
    throw UserError("text encoder dtype " + std::string(dtype_name(spec.text_encoder_dtype)) + ": expected fp32 or bf16");
  // The components must fit together; checked here too so a mismatch fails before gigabytes are written
  // (inspect_wan_pipeline checks the written directory again at the end).
  const WanTransformerConfig transformer_config =
      WanTransformerConfig::from_json(pipeline::read_json_object_file(spec.transformer_config), spec.transformer_config);
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
    pipeline::copy_into((fs::path(spec.tokenizer_dir) / name).string(), (out / "tokenizer" / name).string());
  pipeline::copy_into(spec.scheduler_config, (out / "scheduler" / "scheduler_config.json").string());
  pipeline::write_json_file((out / "model_index.json").string(),
                  model_index(pipeline::optional_string(scheduler, "_class_name", spec.scheduler_config), spec.expand_timesteps));
  (void)inspect_wan_pipeline(out_dir);  // the components must fit together (channels, text width)
  output.commit();
}

}  // namespace dattn
