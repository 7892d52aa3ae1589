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
#include "pipeline/hunyuanvideo15/component_checks.h"

namespace dattn {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

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
  {
    const std::string guider = (fs::path(pipeline::require_dir(dir, "guider")) / "guider_config.json").string();
    pipeline::require_file(guider);
    const hv15::GuiderSettings g = hv15::read_guider(guider);
    info.guider_enabled = g.enabled;
    info.guider_scale = g.scale;
  }

  info.transformer = HunyuanVideo15TransformerConfig::load(info.transformer_dir);
  info.vae = HunyuanVideo15VaeConfig::from_json(read_component_config(info.vae_dir), info.vae_dir + "/config.json");
  info.num_train_timesteps = load_scheduler(info.scheduler_config)->num_train_timesteps();
  const std::int64_t qwen_width = Qwen25VLTextConfig::load(info.text_encoder_dir).hidden_size;
  const std::int64_t byt5_width = Umt5Config::load_t5_family(info.text_encoder_2_dir).d_model;

  hv15::check_components(info.transformer, info.vae, qwen_width, byt5_width, dir);
  return info;
}

}  // namespace dattn
