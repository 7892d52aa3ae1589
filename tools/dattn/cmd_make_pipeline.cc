// dattn make-pipeline: a whole WanPipeline directory with random weights, for demos and benchmarks of
// `dattn generate` without downloading a model.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "dattn/command.h"
#include "dattn/core/error.h"
#include "dattn/pipeline/wan/random_pipeline.h"
#include "dattn/seed_option.h"

namespace dattn::tool {
namespace {

struct MakePipelineOptions {
  RandomWanPipelineSpec spec;
  std::string out, dtype = "fp32", text_encoder_dtype = "fp32";
};

int run_make_pipeline(MakePipelineOptions o) {
  const auto dtype = parse_dtype(o.dtype);
  if (!dtype || (*dtype != DType::F32 && *dtype != DType::BF16 && *dtype != DType::F16))
    throw UserError("--dtype '" + o.dtype + "': expected fp32, bf16 or fp16");
  o.spec.dtype = *dtype;
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
      "make-pipeline", "Write a diffusers WanPipeline directory with random weights: transformer (as make-checkpoint), "
                       "decode-only VAE, umT5 text encoder, copied tokenizer and scheduler config");
  app->add_option("--transformer-config", o->spec.transformer_config, "WanTransformer3DModel config.json")
      ->required()->type_name("FILE");
  app->add_option("--vae-config", o->spec.vae_config, "AutoencoderKLWan config.json")->required()->type_name("FILE");
  app->add_option("--text-encoder-config", o->spec.text_encoder_config, "umT5 config.json")->required()->type_name("FILE");
  app->add_option("--tokenizer", o->spec.tokenizer_dir, "Tokenizer folder to copy (spiece.model, tokenizer_config.json)")
      ->required()->type_name("DIR");
  app->add_option("--scheduler-config", o->spec.scheduler_config, "scheduler_config.json to copy")->required()
      ->type_name("FILE");
  app->add_option("--expand-timesteps", o->spec.expand_timesteps,
                  "model_index.json's expand_timesteps (per-token timesteps, Wan2.2 TI2V)")->capture_default_str();
  app->add_option("--out", o->out, "Directory to create (must not exist, or be empty)")->required()->type_name("DIR");
  app->add_option("--dtype", o->dtype, "Transformer weights: fp32, bf16 or fp16")->capture_default_str();
  app->add_option("--text-encoder-dtype", o->text_encoder_dtype,
                  "umT5 weights: fp32 or bf16 (bf16 for umT5-XXL: 11.4 GB instead of 22.8 GB)")
      ->capture_default_str();
  add_seed_option(*app, o->spec.seed, "Seed of the weights, 0 to 2^64-1");
  return {app, false, [o](const CommandContext&) { return run_make_pipeline(*o); }};
}

}  // namespace dattn::tool
