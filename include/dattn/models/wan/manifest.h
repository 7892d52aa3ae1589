#pragma once
// Every parameter of a WanTransformer3DModel, named and shaped as in diffusers' state dict, derived from
// the config alone. Loading checks a checkpoint against it (missing, unexpected, wrong shape) and
// make-checkpoint writes exactly these tensors.
#include <string>
#include <vector>

#include "dattn/models/param_spec.h"
#include "dattn/models/wan/config.h"

namespace dattn {

std::vector<ParamSpec> wan_transformer_manifest(const WanTransformerConfig& config);

}  // namespace dattn
