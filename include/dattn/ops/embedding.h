#pragma once
// Sinusoidal timestep embedding (diffusers' get_timestep_embedding / Timesteps).
#include "dattn/core/tensor.h"

namespace dattn::ops {

struct TimestepEmbeddingParams {
  int dim = 256;                    // output width; an odd width gets a zero last column
  bool flip_sin_to_cos = true;      // [cos, sin] when true, [sin, cos] when false
  float downscale_freq_shift = 0;   // frequencies exp(-ln(max_period) i / (dim/2 - shift))
  float scale = 1;                  // multiplies the arguments
  float max_period = 10000;
};

// t [N] (any float dtype) -> [N, dim] float32 on t's device. Computed in float32 exactly as diffusers
// does (the timestep is rounded to float32 and multiplied by float32 frequencies), so that large
// timesteps (700 rad arguments) round the same way as the reference.
Tensor timestep_embedding(const Tensor& t, const TimestepEmbeddingParams& p);

}  // namespace dattn::ops
