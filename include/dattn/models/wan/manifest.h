#pragma once
// Every parameter of a WanTransformer3DModel, named and shaped as in diffusers' state dict, derived from
// the config alone. Loading checks a checkpoint against it (missing, unexpected, wrong shape) and
// make-checkpoint writes exactly these tensors.
#include <string>
#include <vector>

#include "dattn/core/tensor.h"
#include "dattn/models/wan/config.h"

namespace dattn {

enum class ParamKind {
  Weight,      // a Linear or Conv3d weight: fan-in is the product of all but the first dimension
  Bias,
  NormWeight,  // LayerNorm / RMSNorm gain (near 1)
  NormBias,
  Modulation,  // scale_shift_table: added to the timestep projection
};

struct ParamSpec {
  std::string name;
  Shape shape;
  ParamKind kind = ParamKind::Weight;
  // diffusers keeps these in float32 whatever the model dtype (_keep_in_fp32_modules: time_embedder,
  // scale_shift_table, norm1/2/3); dattn does the same, so a bf16 run rounds where diffusers rounds.
  bool keep_fp32 = false;
};

std::vector<ParamSpec> wan_transformer_manifest(const WanTransformerConfig& config);

}  // namespace dattn
