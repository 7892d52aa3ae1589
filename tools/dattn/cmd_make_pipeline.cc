// dattn make-pipeline: a whole pipeline directory with random weights (WanPipeline, or
// HunyuanVideo15Pipeline when the transformer config says HunyuanVideo15Transformer3DModel), for demos and
// benchmarks of `dattn generate` without downloading a model.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "dattn/command.h"
#include "dattn/core/error.h"
#include "dattn/core/files.h"
#include "dattn/pipeline/hunyuanvideo15/random_pipeline.h"
#include "dattn/pipeline/wan/random_pipeline.h"
#include "dattn/seed_option.h"

namespace dattn::tool {
namespace {

struct MakePipelineOptions {
  RandomWanPipelineSpec spec;
  std::string out, dtype = "fp32", text_encoder_dtype = "fp32";
  std::string text_encoder_2_config, tokenizer_2, guider_config;  // HunyuanVideo-1.5 only
};

// The config's _class_name ("" when it has none); a file that is not JSON is left to the writer's check.
std::string transformer_class(const std::string& path) {
  refuse_special_file(path, "--transformer-config");
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  return j.is_object() && j.contains("_class_name") && j.at("_class_name").is_string()
             ? j.at("_class_name").get<std::string>()
             : std::string();
}

int run_make_hv15_pipeline(const MakePipelineOptions& o, DType dtype) {
  const auto need = [&](const std::string& value, const char* flag) {
    if (value.empty()) throw UserError(std::string(flag) + " is required for a HunyuanVideo-1.5 pipeline");
  };
  need(o.text_encoder_2_config, "--text-encoder-2-config");
  need(o.tokenizer_2, "--tokenizer-2");
  need(o.guider_config, "--guider-config");
  if (o.text_encoder_dtype != "fp32")
    throw UserError("--text-encoder-dtype is for a Wan pipeline's umT5; HunyuanVideo-1.5's Qwen text encoder is "
                    "written in --dtype (and ByT5 in fp32)");
  RandomHv15PipelineSpec spec{o.spec.transformer_config, o.spec.vae_config, o.spec.text_encoder_config,
                              o.text_encoder_2_config, o.spec.tokenizer_dir, o.tokenizer_2, o.spec.scheduler_config,
                              o.guider_config, dtype, o.spec.seed};
  const auto t0 = std::chrono::steady_clock::now();
  write_random_hv15_pipeline(o.out, spec);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("wrote %s: HunyuanVideo15Pipeline with random weights (transformer and Qwen %s, VAE and ByT5 fp32, "
              "seed %llu), %.1f s\n",
              o.out.c_str(), std::string(dtype_name(dtype)).c_str(), static_cast<unsigned long long>(o.spec.seed), seconds);
  return 0;
}

int run_make_pipeline(MakePipelineOptions o) {
  const auto dtype = parse_dtype(o.dtype);
  if (!dtype || (*dtype != DType::F32 && *dtype != DType::BF16 && *dtype != DType::F16))
    throw UserError("--dtype '" + o.dtype + "': expected fp32, bf16 or fp16");
  o.spec.dtype = *dtype;
  if (transformer_class(o.spec.transformer_config) == "HunyuanVideo15Transformer3DModel")
    return run_make_hv15_pipeline(o, *dtype);
  // A Wan pipeline: the HunyuanVideo-1.5 inputs would be ignored in silence.
  for (const auto& [value, flag] : {std::pair{&o.text_encoder_2_config, "--text-encoder-2-config"},
                                    std::pair{&o.tokenizer_2, "--tokenizer-2"},
                                    std::pair{&o.guider_config, "--guider-config"}})
    if (!value->empty())
      throw UserError(std::string(flag) + " is for a HunyuanVideo-1.5 pipeline (a transformer config of class "
                      "HunyuanVideo15Transformer3DModel); this transformer config makes a Wan pipeline");
  const auto text_dtype = parse_dtype(o.text_encoder_dtype);
  if (!text_dtype || (*text_dtype != DType::F32 && *text_dtype != DType::BF16))
    throw UserError("--text-encoder-dtype '" + o.text_encoder_dtype + "': expected fp32 or bf16");
  o.spec.text_encoder_dtype = *text_dtype;
  const auto t0 = std::chrono::steady_clock::now();
  write_random_wan_pipeline(o.out, o.spec);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("wrote %s: WanPipeline with random weights (transformer %s, text encoder %s, seed %llu), %.1f s\n",
              o.out.c_str(), std::string(dtype_name(o.spec.dtype)).c_str(),
              std::string(dtype_name(o.spec.text_encoder_dtype)).c_str(), static_cast<unsigned long long>(o.spec.seed),
              seconds);
  return 0;
}

}  // namespace

Command add_make_pipeline_command(CLI::App& root) {
  auto o = std::make_shared<MakePipelineOptions>();
  CLI::App* app = root.add_subcommand(
      "make-pipeline", "Write a diffusers pipeline directory with random weights: transformer (as make-checkpoint), "
                       "decode-only VAE, text encoder(s), copied tokenizer(s) and scheduler (and guider) config. "
                       "WanPipeline, or HunyuanVideo15Pipeline for a HunyuanVideo15Transformer3DModel config");
  app->add_option("--transformer-config", o->spec.transformer_config,
                  "WanTransformer3DModel or HunyuanVideo15Transformer3DModel config.json")
      ->required()->type_name("FILE");
  app->add_option("--vae-config", o->spec.vae_config, "AutoencoderKLWan or AutoencoderKLHunyuanVideo15 config.json")
      ->required()->type_name("FILE");
  app->add_option("--text-encoder-config", o->spec.text_encoder_config, "umT5 (Wan) or Qwen2.5-VL text (HV1.5) config.json")
      ->required()->type_name("FILE");
  app->add_option("--tokenizer", o->spec.tokenizer_dir,
                  "Tokenizer folder to copy (Wan: spiece.model, tokenizer_config.json; HV1.5: the Qwen2 folder)")
      ->required()->type_name("DIR");
  app->add_option("--text-encoder-2-config", o->text_encoder_2_config, "HV1.5: the ByT5 T5EncoderModel config.json")
      ->type_name("FILE");
  app->add_option("--tokenizer-2", o->tokenizer_2, "HV1.5: the ByT5 tokenizer folder to copy")->type_name("DIR");
  app->add_option("--guider-config", o->guider_config, "HV1.5: guider_config.json to copy")->type_name("FILE");
  app->add_option("--scheduler-config", o->spec.scheduler_config, "scheduler_config.json to copy")->required()
      ->type_name("FILE");
  app->add_option("--expand-timesteps", o->spec.expand_timesteps,
                  "model_index.json's expand_timesteps (per-token timesteps, Wan2.2 TI2V)")->capture_default_str();
  app->add_option("--out", o->out, "Directory to create (must not exist, or be empty)")->required()->type_name("DIR");
  app->add_option("--dtype", o->dtype, "Transformer weights (HV1.5: and the Qwen text model's): fp32, bf16 or fp16")
      ->capture_default_str();
  app->add_option("--text-encoder-dtype", o->text_encoder_dtype,
                  "umT5 weights: fp32 or bf16 (bf16 for umT5-XXL: 11.4 GB instead of 22.8 GB)")
      ->capture_default_str();
  add_seed_option(*app, o->spec.seed, "Seed of the weights, 0 to 2^64-1");
  return {app, false, [o](const CommandContext&) { return run_make_pipeline(*o); }};
}

}  // namespace dattn::tool
