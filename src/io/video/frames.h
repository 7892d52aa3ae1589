#pragma once
// The frame tensor the writers take: shape checks and quantization to 8-bit RGB.
#include <cstdint>
#include <string>
#include <vector>

#include "dattn/core/tensor.h"

namespace dattn::video_detail {

struct FrameGeometry {
  std::int64_t frames = 0, height = 0, width = 0;
};

// [F,H,W,3] or [1,F,H,W,3], fp32 or fp64, no dimension 0; else UserError naming `path`.
FrameGeometry frame_geometry(const Tensor& frames, const std::string& path);

// The NaN and Inf values of `frames` (any shape, fp32 or fp64, any device): how many, and the flat
// index of the first.
struct NonFiniteValues {
  std::size_t count = 0;
  std::size_t first = 0;
};
NonFiniteValues find_nonfinite(const Tensor& frames);

// Throws NumericError naming `path`, the count of `values` and the first NaN or Inf (frame, row, column,
// channel from its flat index in the video `g`): clamping would turn Inf into a white pixel and a NaN
// into anything, hiding a failed model.
[[noreturn]] void throw_nonfinite(const NonFiniteValues& bad, std::size_t values, const FrameGeometry& g,
                                  const std::string& path);

// clamp(x, 0, 1), then round(x * 255) with ties to even, in the tensor's precision as numpy computes
// it. Throws NumericError naming the first NaN (a model failure, not something to hide).
std::vector<std::uint8_t> quantize_frames(const Tensor& frames, const std::string& path);

}  // namespace dattn::video_detail
