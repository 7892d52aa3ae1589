#pragma once
// A umT5 encoder checkpoint with seeded random weights (transformers' layout: config.json and
// model.safetensors), for demos and tests that need a text encoder without downloading one.
#include <cstdint>
#include <string>

#include "dattn/core/dtype.h"
#include "dattn/models/umt5.h"

namespace dattn {

// The config.json transformers writes for an encoder-only umT5 of these dimensions.
nlohmann::json umt5_config_json(const Umt5Config& config);

struct RandomUmt5Options {
  DType dtype = DType::F32;                       // of every tensor: fp32 or bf16 (umT5-XXL ships bf16)
  std::uint64_t max_shard_bytes = 5'000'000'000;  // shards above this size, as transformers does
};

// Writes `dir`/config.json and the weights (model.safetensors, or shards plus model.safetensors.index.json
// above options.max_shard_bytes), streamed one tensor at a time: embedding N(0, 1), Linear weights
// N(0, 1/fan_in), relative position biases N(0, 0.1^2), norm gains 1 + N(0, 0.1^2), each tensor from
// its own stream keyed by (seed, name). Creates `dir`; throws UserError when it cannot.
void write_random_umt5_encoder(const std::string& dir, const Umt5Config& config, std::uint64_t seed,
                               const RandomUmt5Options& options = {});

}  // namespace dattn
