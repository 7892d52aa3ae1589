#pragma once
// Every parameter of a HunyuanVideo15Transformer3DModel, named and shaped as in diffusers' state dict,
// derived from the config alone (see dattn/models/param_spec.h).
#include <vector>

#include "dattn/models/hunyuanvideo15/config.h"
#include "dattn/models/param_spec.h"

namespace dattn {

std::vector<ParamSpec> hunyuanvideo15_transformer_manifest(const HunyuanVideo15TransformerConfig& config);

}  // namespace dattn
