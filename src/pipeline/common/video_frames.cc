// The decoded video's check (see video_frames.h).
#include "pipeline/common/video_frames.h"

#include <string>

#include "dattn/core/error.h"
#include "dattn/ops/finite.h"

namespace dattn::pipeline {

void check_decoded_video(const Tensor& decoded) {
  if (const ops::NonFinite bad = ops::count_nonfinite(decoded); bad.count)
    throw NumericError("vae decode produced non-finite video (" + std::to_string(bad.nan) + " NaN and " +
                       std::to_string(bad.count - bad.nan) + " Inf of " + std::to_string(decoded.numel()) +
                       " values) from finite latents; likely cause: VAE weights with NaN, Inf or huge values "
                       "(a corrupt or mis-converted vae/ checkpoint). Nothing was written.");
}

}  // namespace dattn::pipeline
