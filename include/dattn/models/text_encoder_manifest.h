#pragma once
// The parameter lists of the transformers text encoders dattn runs, named as transformers saves them,
// derived from their configs: what `dattn make-checkpoint` writes for a text encoder's config.json
// (`architectures` Qwen2_5_VLTextModel or T5EncoderModel) with random weights.
#include <vector>

#include "dattn/models/param_spec.h"
#include "dattn/models/qwen2_5_vl.h"
#include "dattn/models/umt5.h"

namespace dattn {

// Qwen2_5_VLTextModel: embed_tokens, per layer the two RMS norms, q/k/v (with bias), o, the SwiGLU MLP
// (gate, up, down), the final norm.
std::vector<ParamSpec> qwen25vl_text_manifest(const Qwen25VLTextConfig& config);

// T5EncoderModel of the T5 family (t5 / mt5 / ByT5: the relative position bias in block 0 only; umT5's
// per-block biases when the config says so): shared (the tied token embedding), per block the attention
// q/k/v/o, the gated-GELU feed-forward wi_0/wi_1/wo and the two layer norms, the final layer norm.
std::vector<ParamSpec> t5_encoder_manifest(const T5EncoderConfig& config);

}  // namespace dattn
