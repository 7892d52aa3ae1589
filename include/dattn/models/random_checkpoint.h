#pragma once
// Model directories with random weights (`dattn make-checkpoint`): a diffusers component directory for
// any supported config, so full-size models can be run and measured without downloading anything.
#include <cstdint>
#include <string>
#include <vector>

#include "dattn/core/dtype.h"
#include "dattn/io/checkpoint_writer.h"
#include "dattn/models/param_spec.h"

namespace dattn {

struct RandomCheckpointOptions {
  DType dtype = DType::BF16;  // of every tensor but those the model keeps in float32 (written as F32)
  std::uint64_t seed = 0;
  std::uint64_t max_shard_bytes = 5'000'000'000;  // shards above this size, as diffusers does
};

struct RandomCheckpointSummary {
  std::string model_class;
  std::size_t tensors = 0;
  std::uint64_t parameters = 0;
  CheckpointWriteResult written;
};

// Reads `config_path` (a config.json; `_class_name` WanTransformer3DModel (or absent),
// HunyuanVideo15Transformer3DModel, or AutoencoderKLHunyuanVideo15: its decoder's tensors, in float32; or a
// transformers text encoder whose `architectures` is [Qwen2_5_VLTextModel] or [T5EncoderModel], written as
// model.safetensors), and
// writes `out_dir`/config.json (a verbatim copy) and the weights. Weights are deterministic in the seed:
// every tensor is drawn from its own stream keyed by its name, so they do not depend on sharding.
// Scales keep a forward numerically sane at any size: Linear/Conv weights N(0, 1/fan_in), biases
// N(0, 0.02^2), norm gains 1 + N(0, 0.02^2), scale_shift_tables N(0, 1/dim) (diffusers' init).
// `out_dir` is created; an existing non-empty directory is refused. Throws UserError.
RandomCheckpointSummary write_random_checkpoint(const std::string& config_path, const std::string& out_dir,
                                                const RandomCheckpointOptions& options);

// The same for any model given its manifest: `out_dir`/config.json holds `config_text`, the weights go
// to `weights_stem`.safetensors (diffusers: "diffusion_pytorch_model", transformers: "model"), sharded
// above options.max_shard_bytes with an index, each tensor initialised by its ParamKind as above.
RandomCheckpointSummary write_random_params(const std::string& out_dir, const std::string& weights_stem,
                                            const std::string& config_text, const std::vector<ParamSpec>& manifest,
                                            const std::string& model_class, const RandomCheckpointOptions& options);

}  // namespace dattn
