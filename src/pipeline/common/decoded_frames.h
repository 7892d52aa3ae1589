#pragma once
// A decoded video becoming the result's frames range by range, as a VAE finishes them: each range is
// checked for NaN and Inf, converted to RGB in [0, 1] on the VAE's device (ops::video_to_rgb_frames),
// copied into the host frames and handed to the observer's on_frames.
#include <cstdint>
#include <functional>

#include "dattn/core/tensor.h"

namespace dattn::pipeline {

class DecodedFrames {
 public:
  // `on_frames` may be empty.
  explicit DecodedFrames(std::function<void(const Tensor& frames)> on_frames);

  // Frames [done so far, end) of `video` [1, C, F, H, W] (float32, the VAE's device) are final. Throws
  // NumericError when they hold NaN or Inf (the latents were finite: the VAE made them).
  void ready(const Tensor& video, std::int64_t end);
  // The frames not handed over yet, then all frames [F, H, W, C] float32 on the host.
  Tensor finish(const Tensor& video);

 private:
  std::function<void(const Tensor&)> on_frames_;
  Tensor frames_;  // host, allocated at the first range
  std::int64_t done_ = 0;
};

}  // namespace dattn::pipeline
