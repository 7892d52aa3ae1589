#pragma once
// Resampling and output steps of the causal video VAEs on channels-last frames [T, H, W, C] float32
// (see conv.h for why channels-last), on the CPU or CUDA; on CUDA the frames may also be bfloat16 (the
// bf16 decode: arithmetic in float32, each result rounded once; the tensors of one call share a dtype,
// except write_unpatchified_frames' video, always float32). Results have the input's dtype.
#include <cstdint>

#include "dattn/core/tensor.h"

namespace dattn::ops {

// Nearest 2x upsampling in space. With parts > 1 the channels of each input frame are first split into
// `parts` frames (frame t * parts + a takes channels [a * C / parts, (a + 1) * C / parts) of frame t): a
// causal VAE's time conv doubles the channels to double the frames. x [T, H, W, C] -> [T * parts, 2H,
// 2W, C / parts]. For an integer factor PyTorch's "nearest-exact" reads the source pixel floor(i / 2),
// as plain nearest does.
Tensor upsample_nearest2x(const Tensor& x, int parts = 1);

// diffusers' DupUp3D shortcut added to `out` in place: each input channel is repeated, and the copies
// spread over a factor_t x factor_s x factor_s block of output frames and pixels; the first `drop`
// output frames of the full result are left out (a causal VAE's first chunk drops factor_t - 1).
// in [T, H, W, Cin], out [T * factor_t - drop, H * factor_s, W * factor_s, Cout], Cout * factor_t *
// factor_s^2 a multiple of Cin: output frame to, pixel (oy, ox), channel co adds input frame
// (to + drop) / factor_t, pixel (oy / fs, ox / fs), channel (((co * ft + a) * fs + p) * fs + q) / repeats
// with a = (to + drop) % ft, p = oy % fs, q = ox % fs, repeats = Cout * ft * fs^2 / Cin.
void add_dup_up(Tensor& out, const Tensor& in, int factor_t, int factor_s, int drop);

// HunyuanVideo-1.5's up-sampling step (diffusers HunyuanVideo15Upsample after its conv), DC-AE style:
// the conv output `h` [T, H, W, factor_t * 4 * Cout] unpacked from channels into factor_t frames of 2x2
// pixels, plus the shortcut, the block's input `x` [T, H, W, Cin] unpacked the same way with its channels
// repeated to Cout. Output frame t * factor_t + a, pixel (2y + p, 2x + q), channel co, with sub-position
// s = (a * 2 + p) * 2 + q, is h[t, y, x, s * Cout + co] + x[t, y, x, (s * Cout + co) / R], R =
// 4 * factor_t * Cout / Cin. With `first_frame` (factor_t 2 and x's first frame is the stream's first),
// that frame becomes one output frame as diffusers treats a video's first frame: s = 2p + q, h channel
// s * 2 Cout + co (the first half of each 2 Cout group) and x channel (s * Cout + co) / (4 Cout / Cin).
// Returns [T', 2H, 2W, Cout] float32 on h's device: T' = factor_t * T, or 2T - 1 with first_frame.
Tensor dcae_upsample(const Tensor& h, const Tensor& x, int factor_t, bool first_frame);

// Writes a decoded chunk [n, h, w, C * p * p] into video [B, C, T, h * p, w * p] at batch `b`, frames
// [t0, t0 + n), undoing diffusers' Wan patchify (whose first patch index runs along the width) and, with
// `clamp`, clamping to [-1, 1] (a NaN stays NaN; Wan's decode clamps, HunyuanVideo-1.5's does not). Both
// float32 on one device.
void write_unpatchified_frames(const Tensor& chunk, int patch, Tensor& video, std::int64_t b, std::int64_t t0,
                               bool clamp = true);

// The last step of a video pipeline (diffusers' VideoProcessor postprocess, output_type "np"): a decoded
// video [1, C, F, H, W] float32 in [-1, 1] to frames [F, H, W, C] float32, (x * 0.5 + 0.5) clamped to
// [0, 1] (NaN and Inf stay as they are, so that a check of the frames still sees them), on the video's
// device: on CUDA the permute runs there, and only the frames travel to the host. `first` and `count`
// (-1: to the end) pick a range of frames, for a caller that takes them as a streaming decoder finishes.
Tensor video_to_rgb_frames(const Tensor& video, std::int64_t first = 0, std::int64_t count = -1);

}  // namespace dattn::ops
