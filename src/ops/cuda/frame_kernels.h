#pragma once
// Launchers of the kernels on channels-last video frames [frames, height, width, C] that the causal
// VAEs' ops use (include/dattn/ops/{conv,frames,norm,softmax}.h); the convolution itself is in conv3d.h.
// Frames are float32 or bfloat16 (the dtype given; arithmetic in float32, bf16 results rounded to
// nearest even once); gains, biases and softmax scores are float32. Plain C++: the dispatchers that
// call them compile without the CUDA toolkit's headers. Every launcher is asynchronous on the current
// run context's stream and reports a bad launch at once.
#include <cstddef>
#include <cstdint>

#include "dattn/core/dtype.h"

namespace dattn::ops::cuda {

// y = x / max(||x||, 1e-12) * gain per row of `c` values (a pixel's channels), then SiLU when `silu`.
// x and y fp32 or bf16, each its own (float32 in and out: the fp32 kernels of old, bit for bit). In
// place is allowed when the dtypes match.
void normalize_channels(const void* x, DType x_dtype, void* y, DType y_dtype, const float* gain, std::int64_t rows,
                        int c, bool silu);

// Row-wise softmax of scale * s over `cols` columns, in place, for `rows` rows.
void softmax_rows(float* s, std::int64_t rows, std::int64_t cols, float scale);

// Nearest 2x upsampling of x [frames_in, h, w, parts * c] read as frames_in * parts frames of c channels
// (frame t * parts + a holds channels [a * c, (a + 1) * c) of input frame t) -> y [frames_in * parts, 2h,
// 2w, c]. parts = 1 is plain upsampling. A copy: `elem_bytes` 4 (fp32) or 2 (bf16).
void upsample_nearest2x(const void* x, void* y, std::size_t elem_bytes, std::int64_t frames_in, std::int64_t h,
                        std::int64_t w, std::int64_t c, int parts);

// diffusers' DupUp3D added to out [t_out, h * fs, w * fs, c_out] from in [t_in, h, w, c_in]; see
// ops::add_dup_up for the index map.
// out and in both of `dtype`.
void add_dup_up(void* out, const void* in, DType dtype, std::int64_t t_out, std::int64_t c_out, std::int64_t h,
                std::int64_t w, std::int64_t c_in, int ft, int fs, int drop);

// ops::dcae_upsample: out [t', 2h, 2w, cout] from h [t, h, w, 4 * ft * cout] and x [t, h, w, cin], all
// three of `dtype`.
void dcae_upsample(const void* h, const void* x, void* out, DType dtype, std::int64_t t, std::int64_t height,
                   std::int64_t width, std::int64_t cout, std::int64_t cin, int ft, bool first_frame);

// y [cols, rows] = x [rows, cols]ᵀ (ops::transpose2d); rows < 65536 * 32.
void transpose2d(const float* x, float* y, std::int64_t rows, std::int64_t cols);

// One chunk [n, h, w, channels * p * p] written into video [B, channels, frames, h * p, w * p] at batch
// b, frame t0, undoing diffusers' patchify and, with `clamp`, clamping to [-1, 1] (NaN stays NaN). The
// chunk fp32 or bf16 (`chunk_dtype`), the video float32.
void unpatchify_clamp(const void* chunk, DType chunk_dtype, float* video, std::int64_t n, std::int64_t h,
                      std::int64_t w, int patch, std::int64_t channels, std::int64_t frames, std::int64_t b,
                      std::int64_t t0, bool clamp);

// frames [f, h, w, c] = clamp(video[c, f, h, w] * 0.5 + 0.5, 0, 1) (NaN stays NaN), both float32
// (ops::video_to_rgb_frames).
// `pixels` of each channel from `video` (the range's first pixel), channels `plane` apart.
void video_to_rgb_frames(const float* video, float* frames, std::int64_t c, std::int64_t pixels, std::int64_t plane);

// dst [frames, h + 2p, w + 2p, c] = src [frames, h, w, c] with p edge pixels repeated around each frame
// (F.pad mode "replicate" in space). A copy: `elem_bytes` 4 (fp32) or 2 (bf16).
void pad_frames_replicate(const void* src, void* dst, std::size_t elem_bytes, std::int64_t frames, std::int64_t h,
                          std::int64_t w, std::int64_t c, int p);

// y[p, c] += bias[c] for a [pixels, c] block; y fp32 or bf16 (`y_dtype`), the sum in float32.
void add_bias(void* y, DType y_dtype, const float* bias, std::int64_t pixels, int c);

// Stream-ordered copies and fills on the current context's stream.
void copy_async(void* dst, const void* src, std::size_t bytes);
void fill_async(void* dst, int byte, std::size_t bytes);

}  // namespace dattn::ops::cuda
