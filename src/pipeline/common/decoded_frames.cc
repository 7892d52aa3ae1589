// DecodedFrames (see decoded_frames.h).
#include "pipeline/common/decoded_frames.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "dattn/core/error.h"
#include "dattn/ops/finite.h"
#include "dattn/ops/frames.h"

namespace dattn::pipeline {

DecodedFrames::DecodedFrames(std::function<void(const Tensor&)> on_frames) : on_frames_(std::move(on_frames)) {}

void DecodedFrames::ready(const Tensor& video, std::int64_t end) {
  if (video.ndim() != 5 || video.dim(0) != 1 || end < done_ || end > video.dim(2))
    throw std::logic_error("DecodedFrames: frames up to " + std::to_string(end) + " of " + video.describe() +
                           " after " + std::to_string(done_));
  if (end == done_) return;
  // Converted first (NaN and Inf stay as they are), then checked: one small read-back per range.
  const Tensor rgb = ops::video_to_rgb_frames(video, done_, end - done_);
  if (const ops::NonFinite bad = ops::count_nonfinite(rgb); bad.count)
    throw NumericError("vae decode produced non-finite video (" + std::to_string(bad.nan) + " NaN and " +
                       std::to_string(bad.count - bad.nan) + " Inf among the values of frames " +
                       std::to_string(done_) + " to " + std::to_string(end - 1) + " of " +
                       std::to_string(video.dim(2)) + ") from finite latents; likely cause: VAE weights with NaN, "
                       "Inf or huge values (a corrupt or mis-converted vae/ checkpoint). Nothing was written.");
  if (!frames_.defined())
    frames_ = Tensor::empty({video.dim(2), video.dim(3), video.dim(4), video.dim(1)}, DType::F32);
  Tensor range = frames_.narrow0(done_, end - done_);
  range.copy_from(rgb);
  done_ = end;
  if (on_frames_) on_frames_(range);
}

Tensor DecodedFrames::finish(const Tensor& video) {
  ready(video, video.dim(2));
  return frames_;
}

}  // namespace dattn::pipeline
