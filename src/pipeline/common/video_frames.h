#pragma once
// The last step of every video pipeline: a decoded video [1, C, F, H, W] in [-1, 1] (host, float32) to
// frames [F, H, W, C] in [0, 1], as diffusers' VideoProcessor postprocess gives them (output_type "np").
#include "dattn/core/tensor.h"

namespace dattn::pipeline {

// (x * 0.5 + 0.5) clamped to [0, 1] (VaeImageProcessor.denormalize), channels last.
Tensor video_to_frames(const Tensor& video);

// NumericError when the decoded video holds NaN or Inf (the latents were finite: the VAE made them).
void check_decoded_video(const Tensor& video);

}  // namespace dattn::pipeline
