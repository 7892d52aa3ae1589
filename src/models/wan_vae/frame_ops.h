#pragma once
// Element-wise and resampling steps of the Wan VAE decoder on frame-major activations.
//
// Activations are "frames": a Tensor [T, C, H, W] of float32 on the CPU. Frame-major (PyTorch's layout is
// [B, C, T, H, W]) because the decoder works on one chunk of frames at a time and every step but the
// causal convolutions is per frame; a frame is then one contiguous [C, H, W] block.
#include <cstdint>

#include "dattn/core/tensor.h"

namespace dattn::wan_vae {

// Loops over fewer elements run on one thread: on small frames an OpenMP barrier costs more than the
// work, and much more when the cores are shared.
inline constexpr std::int64_t kParallelMinElements = std::int64_t{1} << 16;

Tensor new_frames(std::int64_t t, std::int64_t c, std::int64_t h, std::int64_t w);
inline float* frame_ptr(Tensor& x, std::int64_t t) {
  return x.data_as<float>() + t * x.dim(1) * x.dim(2) * x.dim(3);
}
inline const float* frame_ptr(const Tensor& x, std::int64_t t) {
  return x.data_as<float>() + t * x.dim(1) * x.dim(2) * x.dim(3);
}

// diffusers' WanRMS_norm, channel-first: y = x / max(||x||_channels, 1e-12) * sqrt(C) * gamma[c], then
// SiLU when `silu` (the two always come together in the residual blocks and the decoder head).
Tensor rms_norm(const Tensor& x, const float* gamma, bool silu);

// a += b, same shapes.
void add_inplace(Tensor& a, const Tensor& b);

// Nearest 2x upsampling of one frame [C, H, W] -> [C, 2H, 2W]. For an integer factor PyTorch's
// "nearest-exact" reads source pixel floor((i + 0.5) / 2) = floor(i / 2), as plain nearest does.
void upsample_nearest2x(const float* x, float* y, std::int64_t c, std::int64_t h, std::int64_t w);

// diffusers' DupUp3D shortcut added to `out`: each input channel is repeated, and the copies spread over
// a factor_t x factor_s x factor_s block of output frames and pixels. On the first chunk the first
// factor_t - 1 output frames are dropped (causal: the first latent frame decodes to one frame).
// in [T, Cin, H, W], out [T * factor_t - drop, Cout, H * factor_s, W * factor_s].
void add_dup_up(Tensor& out, const Tensor& in, int factor_t, int factor_s, bool first_chunk);

}  // namespace dattn::wan_vae
