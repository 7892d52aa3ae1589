// ops::video_to_rgb_frames on CUDA: the decoded video's permute to channels-last RGB frames and its
// [-1, 1] -> [0, 1] mapping, so that only the frames cross to the host.
#include "ops/cuda/common.cuh"
#include "ops/cuda/frame_kernels.h"

namespace dattn::ops::cuda {
namespace {

// One thread per output element (coalesced stores; the c reads of a pixel are strided by the plane).
// `video` points at the range's first pixel of channel 0; channels are `plane` apart.
__global__ void rgb_frames_kernel(const float* video, float* frames, i64 c, i64 pixels, i64 plane) {
  const i64 total = c * pixels;
  for (i64 i = i64{blockIdx.x} * blockDim.x + threadIdx.x; i < total; i += i64{gridDim.x} * blockDim.x) {
    const i64 pixel = i / c, ch = i - pixel * c;
    const float v = video[ch * plane + pixel] * 0.5f + 0.5f;  // * 0.5 is exact: one rounding, as on the CPU
    // Clamped when finite; NaN and Inf stay as they are, for the caller's check.
    frames[i] = isfinite(v) ? (v < 0.0f ? 0.0f : (1.0f < v ? 1.0f : v)) : v;
  }
}

}  // namespace

void video_to_rgb_frames(const float* video, float* frames, i64 c, i64 pixels, i64 plane) {
  if (c * pixels == 0) return;
  constexpr int kThreads = 256;
  rgb_frames_kernel<<<grid_for(c * pixels, kThreads), kThreads, 0, current_stream()>>>(video, frames, c, pixels,
                                                                                      plane);
  check_launch("video_to_rgb_frames");
}

}  // namespace dattn::ops::cuda
