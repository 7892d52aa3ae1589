// Decoded video to frames (see video_frames.h).
#include "pipeline/common/video_frames.h"

#include <algorithm>
#include <string>

#include "dattn/core/error.h"
#include "dattn/ops/finite.h"

namespace dattn::pipeline {

Tensor video_to_frames(const Tensor& video) {
  const std::int64_t c = video.dim(1), f = video.dim(2), h = video.dim(3), w = video.dim(4);
  Tensor frames = Tensor::empty({f, h, w, c}, DType::F32);
  const float* src = video.data_as<float>();
  float* dst = frames.data_as<float>();
  const std::int64_t plane = f * h * w;
  for (std::int64_t ch = 0; ch < c; ++ch)
    for (std::int64_t i = 0; i < plane; ++i) dst[i * c + ch] = std::clamp(src[ch * plane + i] * 0.5f + 0.5f, 0.0f, 1.0f);
  return frames;
}

void check_decoded_video(const Tensor& decoded) {
  if (const ops::NonFinite bad = ops::count_nonfinite(decoded); bad.count)
    throw NumericError("vae decode produced non-finite video (" + std::to_string(bad.nan) + " NaN and " +
                       std::to_string(bad.count - bad.nan) + " Inf of " + std::to_string(decoded.numel()) +
                       " values) from finite latents; likely cause: VAE weights with NaN, Inf or huge values "
                       "(a corrupt or mis-converted vae/ checkpoint). Nothing was written.");
}

}  // namespace dattn::pipeline
