// write_random_hv15_pipeline: a HunyuanVideo15Pipeline directory with random weights (see the header).
#include "dattn/pipeline/hunyuanvideo15/random_pipeline.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "dattn/core/error.h"
#include "dattn/core/files.h"
#include "dattn/models/qwen2_5_vl.h"
#include "dattn/models/random_checkpoint.h"
#include "dattn/models/umt5.h"
#include "dattn/pipeline/hunyuanvideo15/hv15_pipeline.h"
#include "dattn/pipeline/scheduler.h"
#include "pipeline/common/model_index.h"
#include "pipeline/hunyuanvideo15/component_checks.h"

namespace dattn {
namespace {

namespace fs = std::filesystem;

void copy_folder(const std::string& from, const fs::path& to) {
  if (!fs::is_directory(from)) throw UserError("'" + from + "': not a directory (a tokenizer folder to copy)");
  for (const auto& e : fs::directory_iterator(from))
    if (e.is_regular_file()) pipeline::copy_into(e.path().string(), (to / e.path().filename()).string());
}

// model_index.json as diffusers' save_pretrained writes it for HunyuanVideo15Pipeline.
nlohmann::json model_index() {
  return {{"_class_name", "HunyuanVideo15Pipeline"},
          {"_diffusers_version", "0.40.0.dev0"},
          {"guider", {"diffusers", "ClassifierFreeGuidance"}},
          {"scheduler", {"diffusers", "FlowMatchEulerDiscreteScheduler"}},
          {"text_encoder", {"transformers", "Qwen2_5_VLTextModel"}},
          {"text_encoder_2", {"transformers", "T5EncoderModel"}},
          {"tokenizer", {"transformers", "Qwen2TokenizerFast"}},
          {"tokenizer_2", {"transformers", "ByT5Tokenizer"}},
          {"transformer", {"diffusers", "HunyuanVideo15Transformer3DModel"}},
          {"vae", {"diffusers", "AutoencoderKLHunyuanVideo15"}}};
}

}  // namespace

void write_random_hv15_pipeline(const std::string& out_dir, const RandomHv15PipelineSpec& spec) {
  const fs::path out(out_dir);
  std::error_code ec;  // the non-throwing forms: a link loop is the user's path, not dattn's failure
  if (fs::exists(out, ec) && !(fs::is_directory(out, ec) && fs::is_empty(out, ec)))
    throw UserError("--out '" + out_dir + "' exists and is not an empty directory");
  // Every input checked as inspect_hv15_pipeline checks the written folder, before gigabytes are written, and
  // named as the user gave it.
  const auto config = [](const std::string& path) { return pipeline::read_json_object_file(path); };
  const auto transformer = HunyuanVideo15TransformerConfig::from_json(config(spec.transformer_config), spec.transformer_config);
  const auto vae = HunyuanVideo15VaeConfig::from_json(config(spec.vae_config), spec.vae_config);
  const auto qwen = Qwen25VLTextConfig::from_json(config(spec.text_encoder_config), spec.text_encoder_config);
  const auto byt5 = Umt5Config::from_json_t5_family(config(spec.text_encoder_2_config), spec.text_encoder_2_config);
  if (const auto scheduler = load_scheduler(spec.scheduler_config); scheduler->name() != "FlowMatchEulerDiscreteScheduler")
    throw UserError(spec.scheduler_config + ": a " + scheduler->name() +
                    " config; HunyuanVideo-1.5 runs FlowMatchEulerDiscreteScheduler");
  (void)hv15::read_guider(spec.guider_config);
  hv15::check_components(transformer, vae, qwen.hidden_size, byt5.d_model, spec.transformer_config);
  OutputDirectory output(out_dir, "--out");      // a failed component removes the whole pipeline
  RandomCheckpointOptions o;
  o.dtype = spec.dtype;
  o.seed = spec.seed;
  write_random_checkpoint(spec.transformer_config, (out / "transformer").string(), o);
  o.seed = spec.seed + 2;
  write_random_checkpoint(spec.text_encoder_config, (out / "text_encoder").string(), o);
  o.dtype = DType::F32;  // the VAE and ByT5 ship in float32
  o.seed = spec.seed + 1;
  write_random_checkpoint(spec.vae_config, (out / "vae").string(), o);
  o.seed = spec.seed + 3;
  write_random_checkpoint(spec.text_encoder_2_config, (out / "text_encoder_2").string(), o);
  copy_folder(spec.tokenizer_dir, out / "tokenizer");
  copy_folder(spec.tokenizer_2_dir, out / "tokenizer_2");
  pipeline::copy_into(spec.scheduler_config, (out / "scheduler" / "scheduler_config.json").string());
  pipeline::copy_into(spec.guider_config, (out / "guider" / "guider_config.json").string());
  pipeline::write_json_file((out / "model_index.json").string(), model_index());
  (void)inspect_hv15_pipeline(out_dir);  // the components must fit together (channels, text widths)
  output.commit();
}

}  // namespace dattn
