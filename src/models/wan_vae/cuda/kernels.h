#pragma once
// Launchers of the Wan VAE decoder's own CUDA kernels (the convolutions are in conv.h, the attention's
// matrix products go through ops/cuda/gemm.h). Plain C++: the layer code that calls them compiles without
// the CUDA toolkit's headers. Every launcher is asynchronous on the current run context's stream and
// reports a bad launch at once; activations are float32, frame-major and channels-last: [frames, height, width, C].
#include <cstddef>
#include <cstdint>

namespace dattn::wan_vae::gpu {

using i64 = std::int64_t;

// diffusers' WanRMS_norm per pixel over its `c` channels: y = x / max(||x||, 1e-12) * gain[c] (gain is
// sqrt(c) * gamma, computed on the host as the CPU path does), then SiLU when `silu`. In place is allowed.
void rms_norm(const float* x, float* y, const float* gain, i64 pixels, int c, bool silu);

// Nearest 2x upsampling of x [frames_in, h, w, parts * c] read as frames_in * parts frames of c channels
// (frame t * parts + a holds channels [a * c, (a + 1) * c) of input frame t: the time conv's doubled
// output, split into frames on the way) -> y [frames_in * parts, 2h, 2w, c]. parts = 1 is plain upsampling.
void upsample_nearest2x(const float* x, float* y, i64 frames_in, i64 h, i64 w, i64 c, int parts);

// diffusers' DupUp3D shortcut added to `out` [t_out, h * fs, w * fs, c_out] from `in` [t_in, h, w, c_in]:
// output frame to, pixel (oy, ox), channel co reads input frame (to + drop) / ft, pixel (oy / fs, ox / fs),
// channel (((co * ft + a) * fs + p) * fs + q) / repeats with a = (to + drop) % ft, p = oy % fs, q = ox % fs
// and repeats = c_out * ft * fs * fs / c_in (the CPU's add_dup_up, channels-last).
void add_dup_up(float* out, const float* in, i64 t_out, i64 c_out, i64 h, i64 w, i64 c_in, int ft, int fs, int drop);

// a[i] += b[i] for i < n.
void add_inplace(float* a, const float* b, i64 n);

// y[p, c] += bias[c] for a [pixels, c] block.
void add_bias(float* y, const float* bias, i64 pixels, int c);

// Row-wise softmax of scale * s over `cols` columns, in place, for `rows` rows.
void softmax_rows(float* s, i64 rows, i64 cols, float scale);

// One decoded chunk [n, h, w, channels * p * p] written into video [B, channels, frames, h * p, w * p]
// at batch b, frame t0, undoing diffusers' patchify (its first patch index runs along the width) and
// clamping to [-1, 1], as the CPU's write_frames.
void unpatchify_clamp(const float* chunk, float* video, i64 n, i64 h, i64 w, int patch, i64 channels, i64 frames,
                      i64 b, i64 t0);

// Stream-ordered copies and fills on the current context's stream (device memory, or pinned/pageable host for copies).
void copy_async(void* dst, const void* src, std::size_t bytes);
void fill_async(void* dst, int byte, std::size_t bytes);

}  // namespace dattn::wan_vae::gpu
