#pragma once
// One parameter of a model's state dict as its manifest lists it: every family derives the full list
// from its config alone, loading checks a checkpoint against it (missing, unexpected, wrong shape) and
// make-checkpoint writes exactly these tensors.
#include <string>

#include "dattn/core/tensor.h"

namespace dattn {

enum class ParamKind {
  Weight,      // a Linear or Conv3d weight: fan-in is the product of all but the first dimension
  Bias,
  NormWeight,  // LayerNorm / RMSNorm gain (near 1)
  NormBias,
  Modulation,  // scale_shift_table: added to the timestep projection
  Embedding,   // an nn.Embedding table (rows of unit variance)
};

struct ParamSpec {
  std::string name;
  Shape shape;
  ParamKind kind = ParamKind::Weight;
  // diffusers keeps these in float32 whatever the model dtype (_keep_in_fp32_modules, e.g. Wan's
  // time_embedder, scale_shift_table, norm1/2/3); dattn does the same, so a bf16 run rounds where diffusers rounds.
  bool keep_fp32 = false;
};

}  // namespace dattn
