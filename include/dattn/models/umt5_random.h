#pragma once
// A umT5 encoder checkpoint with seeded random weights (transformers' layout: config.json and
// model.safetensors), for demos and tests that need a text encoder without downloading one.
#include <cstdint>
#include <string>

#include "dattn/models/umt5.h"

namespace dattn {

// The config.json transformers writes for an encoder-only umT5 of these dimensions.
nlohmann::json umt5_config_json(const Umt5Config& config);

// Writes `dir`/config.json and `dir`/model.safetensors (float32): embedding N(0, 1), Linear weights
// N(0, 1/fan_in), relative position biases N(0, 0.1^2), norm gains 1 + N(0, 0.1^2). Creates `dir`;
// throws UserError when it cannot.
void write_random_umt5_encoder(const std::string& dir, const Umt5Config& config, std::uint64_t seed);

}  // namespace dattn
