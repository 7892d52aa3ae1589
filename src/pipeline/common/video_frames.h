#pragma once
// The check on a decoded video before it becomes frames (ops::video_to_rgb_frames does the conversion).
#include "dattn/core/tensor.h"

namespace dattn::pipeline {

// NumericError when the decoded video holds NaN or Inf (the latents were finite: the VAE made them).
void check_decoded_video(const Tensor& video);

}  // namespace dattn::pipeline
