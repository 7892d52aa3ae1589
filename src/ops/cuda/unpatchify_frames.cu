// A decoded chunk (channels-last, patch channels) written into a [B, C, T, H, W] video, undoing diffusers'
// patchify and clamping to [-1, 1] when asked (ops::write_unpatchified_frames).
#include "ops/cuda/frame_kernels.h"
#include "ops/cuda/common.cuh"

namespace dattn::ops::cuda {
namespace {

// One thread per output element, consecutive threads along the video's width (coalesced stores).
__global__ void unpatchify_kernel(const void* chunk, Elt e, float* video, i64 n, i64 h, i64 w, int patch, i64 channels,
                                  i64 frames, i64 b, i64 t0, bool clamp) {
  const i64 vh = h * patch, vw = w * patch, cpp = channels * patch * patch;
  const i64 total = channels * n * vh * vw;
  for (i64 i = i64{blockIdx.x} * blockDim.x + threadIdx.x; i < total; i += i64{gridDim.x} * blockDim.x) {
    const i64 X = i % vw, Y = i / vw % vh, f = i / (vw * vh) % n, c = i / (vw * vh * n);
    const i64 pa = X % patch, pb = Y % patch;
    const float v = load1(chunk, e, ((f * h + Y / patch) * w + X / patch) * cpp + c * patch * patch + pa * patch + pb);
    // std::clamp's comparisons, so that a NaN stays NaN (fminf/fmaxf would hide it).
    video[(((b * channels + c) * frames + t0 + f) * vh + Y) * vw + X] =
        clamp ? (v < -1.0f ? -1.0f : (1.0f < v ? 1.0f : v)) : v;
  }
}

}  // namespace

void unpatchify_clamp(const void* chunk, DType chunk_dtype, float* video, i64 n, i64 h, i64 w, int patch, i64 channels,
                      i64 frames, i64 b, i64 t0, bool clamp) {
  const i64 total = channels * n * h * patch * w * patch;
  if (total == 0) return;
  constexpr int kThreads = 256;
  const cudaStream_t stream = current_stream();
  unpatchify_kernel<<<grid_for(total, kThreads), kThreads, 0, stream>>>(chunk, elt_of(chunk_dtype), video, n, h, w,
                                                                        patch, channels, frames, b, t0, clamp);
  check_launch("unpatchify_clamp");
}

}  // namespace dattn::ops::cuda
