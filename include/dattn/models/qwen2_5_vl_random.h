#pragma once
// A Qwen2.5-VL text model checkpoint with seeded random weights (transformers' layout: config.json and
// model.safetensors, sharded above 5 GB), for full-size runs without downloading the 7B model.
#include <string>
#include <vector>

#include "dattn/models/param_spec.h"
#include "dattn/models/qwen2_5_vl.h"
#include "dattn/models/random_checkpoint.h"

namespace dattn {

// Every tensor Qwen2_5_VLTextModel saves (embed_tokens, per layer the norms, q/k/v with bias, o, the
// SwiGLU MLP, the final norm), named as transformers names them.
std::vector<ParamSpec> qwen25vl_text_manifest(const Qwen25VLTextConfig& config);

// Reads `config_path` (a Qwen2.5-VL text config.json), copies it to `out_dir` and writes random weights
// (see write_random_params). Throws UserError.
RandomCheckpointSummary write_random_qwen25vl_text_model(const std::string& config_path, const std::string& out_dir,
                                                         const RandomCheckpointOptions& options);

}  // namespace dattn
