#pragma once
// Launchers of the kernels on channels-last video frames [frames, height, width, C] float32 that the
// causal VAEs' ops use (include/dattn/ops/{conv,frames,norm,softmax}.h); the convolution itself is in
// conv3d.h. Plain C++: the dispatchers that call them compile without the CUDA toolkit's headers.
// Every launcher is asynchronous on the current run context's stream and reports a bad launch at once.
#include <cstddef>
#include <cstdint>

namespace dattn::ops::cuda {

// y = x / max(||x||, 1e-12) * gain per row of `c` values (a pixel's channels), then SiLU when `silu`.
// In place is allowed.
void normalize_channels(const float* x, float* y, const float* gain, std::int64_t rows, int c, bool silu);

// Row-wise softmax of scale * s over `cols` columns, in place, for `rows` rows.
void softmax_rows(float* s, std::int64_t rows, std::int64_t cols, float scale);

// Nearest 2x upsampling of x [frames_in, h, w, parts * c] read as frames_in * parts frames of c channels
// (frame t * parts + a holds channels [a * c, (a + 1) * c) of input frame t) -> y [frames_in * parts, 2h,
// 2w, c]. parts = 1 is plain upsampling.
void upsample_nearest2x(const float* x, float* y, std::int64_t frames_in, std::int64_t h, std::int64_t w,
                        std::int64_t c, int parts);

// diffusers' DupUp3D added to out [t_out, h * fs, w * fs, c_out] from in [t_in, h, w, c_in]; see
// ops::add_dup_up for the index map.
void add_dup_up(float* out, const float* in, std::int64_t t_out, std::int64_t c_out, std::int64_t h,
                std::int64_t w, std::int64_t c_in, int ft, int fs, int drop);

// ops::dcae_upsample: out [t', 2h, 2w, cout] from h [t, h, w, 4 * ft * cout] and x [t, h, w, cin].
void dcae_upsample(const float* h, const float* x, float* out, std::int64_t t, std::int64_t height, std::int64_t width,
                   std::int64_t cout, std::int64_t cin, int ft, bool first_frame);

// y [cols, rows] = x [rows, cols]ᵀ (ops::transpose2d); rows < 65536 * 32.
void transpose2d(const float* x, float* y, std::int64_t rows, std::int64_t cols);

// One chunk [n, h, w, channels * p * p] written into video [B, channels, frames, h * p, w * p] at batch
// b, frame t0, undoing diffusers' patchify and, with `clamp`, clamping to [-1, 1] (NaN stays NaN).
void unpatchify_clamp(const float* chunk, float* video, std::int64_t n, std::int64_t h, std::int64_t w, int patch,
                      std::int64_t channels, std::int64_t frames, std::int64_t b, std::int64_t t0, bool clamp);

// dst [frames, h + 2p, w + 2p, c] = src [frames, h, w, c] with p edge pixels repeated around each frame
// (F.pad mode "replicate" in space).
void pad_frames_replicate(const float* src, float* dst, std::int64_t frames, std::int64_t h, std::int64_t w,
                          std::int64_t c, int p);

// y[p, c] += bias[c] for a [pixels, c] block.
void add_bias(float* y, const float* bias, std::int64_t pixels, int c);

// Stream-ordered copies and fills on the current context's stream.
void copy_async(void* dst, const void* src, std::size_t bytes);
void fill_async(void* dst, int byte, std::size_t bytes);

}  // namespace dattn::ops::cuda
