// dattn make-checkpoint: a diffusers model directory with random weights for a config, so full-size
// models can be run and measured without downloading anything.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "dattn/command.h"
#include "dattn/core/error.h"
#include "dattn/models/random_checkpoint.h"
#include "dattn/seed_option.h"

namespace dattn::tool {
namespace {

struct MakeCheckpointOptions {
  std::string config, out, dtype = "bf16", max_shard_size = "5GB";
  std::uint64_t seed = 0;
};

int run_make_checkpoint(const MakeCheckpointOptions& o) {
  RandomCheckpointOptions opt;
  const auto dtype = parse_dtype(o.dtype);
  if (!dtype || (*dtype != DType::F32 && *dtype != DType::BF16 && *dtype != DType::F16))
    throw UserError("--dtype '" + o.dtype + "': expected fp32, bf16 or fp16");
  opt.dtype = *dtype;
  opt.seed = o.seed;
  opt.max_shard_bytes = parse_byte_size(o.max_shard_size, "--max-shard-size");
  if (opt.max_shard_bytes == 0) throw UserError("--max-shard-size '" + o.max_shard_size + "': expected more than 0");
  const auto t0 = std::chrono::steady_clock::now();
  const RandomCheckpointSummary s = write_random_checkpoint(o.config, o.out, opt);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::size_t weight_files = s.written.files.size() > 1 ? s.written.files.size() - 1 : 1;
  const double params = double(s.parameters), bytes = double(s.written.total_bytes);
  std::printf("wrote %s: %s, %zu tensors, %.4g%s parameters, %.4g %s in %zu weight file%s%s (%s, seed %llu), %.1f s\n",
              o.out.c_str(), s.model_class.c_str(), s.tensors, params >= 1e9 ? params * 1e-9 : params * 1e-6,
              params >= 1e9 ? " B" : " M", bytes >= 1e9 ? bytes * 1e-9 : bytes * 1e-6, bytes >= 1e9 ? "GB" : "MB",
              weight_files, weight_files > 1 ? "s" : "",
              weight_files > 1 ? " + index" : "", std::string(dtype_name(opt.dtype)).c_str(),
              static_cast<unsigned long long>(o.seed), seconds);
  return 0;
}

}  // namespace

Command add_make_checkpoint_command(CLI::App& root) {
  auto o = std::make_shared<MakeCheckpointOptions>();
  CLI::App* app = root.add_subcommand(
      "make-checkpoint", "Write a diffusers model directory (config.json + safetensors) with random weights for a "
                         "transformer config or a HunyuanVideo-1.5 VAE config (its decoder)");
  app->add_option("--config", o->config, "A config.json: WanTransformer3DModel, HunyuanVideo15Transformer3DModel or AutoencoderKLHunyuanVideo15")->required()
      ->type_name("CONFIG.json");
  app->add_option("--out", o->out, "Directory to create (must not exist, or be empty)")->required()->type_name("DIR");
  app->add_option("--dtype", o->dtype,
                  "fp32, bf16 or fp16 (parameters the model keeps in float32 are written as F32)")
      ->capture_default_str();
  add_seed_option(*app, o->seed, "Seed of the weights (the same seed gives the same bytes), 0 to 2^64-1");
  app->add_option("--max-shard-size", o->max_shard_size,
                  "Shard the weights above this size, with an index, as diffusers does (B, KB, MB, GB, KiB...)")
      ->capture_default_str()->type_name("SIZE");
  return {app, false, [o](const CommandContext&) { return run_make_checkpoint(*o); }};
}

}  // namespace dattn::tool
