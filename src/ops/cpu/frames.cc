// CPU kernels of the channels-last frame ops (include/dattn/ops/frames.h), normalize_channels and softmax.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "ops/cpu/cpu_ops.h"

namespace dattn::ops::cpu {
namespace {

using i64 = std::int64_t;

// Loops over fewer elements run on one thread: on small frames an OpenMP barrier costs more than the work.
constexpr i64 kParallelMinElements = i64{1} << 16;

}  // namespace

Tensor normalize_channels(const Tensor& x, const Tensor& gain, bool silu) {
  const i64 c = x.dim(-1), rows = x.numel() / std::max<i64>(c, 1);
  Tensor y = Tensor::empty(x.shape(), DType::F32);
  const float* src = x.data_as<float>();
  const float* g = gain.data_as<float>();
  float* dst = y.data_as<float>();
#pragma omp parallel for schedule(static) if (x.numel() >= kParallelMinElements)
  for (i64 r = 0; r < rows; ++r) {
    const float* xs = src + r * c;
    float* ys = dst + r * c;
    float sum = 0.0f;
    for (i64 i = 0; i < c; ++i) sum += xs[i] * xs[i];
    // F.normalize divides by max(norm, eps), eps = 1e-12; std::max keeps a NaN norm NaN.
    const float inv = 1.0f / std::max(std::sqrt(sum), 1e-12f);
    for (i64 i = 0; i < c; ++i) {
      const float v = xs[i] * inv * g[i];
      ys[i] = silu ? v / (1.0f + std::exp(-v)) : v;
    }
  }
  return y;
}

Tensor softmax(const Tensor& x, float scale) {
  const i64 cols = x.dim(-1), rows = x.numel() / std::max<i64>(cols, 1);
  Tensor y = Tensor::empty(x.shape(), DType::F32);
  const float* src = x.data_as<float>();
  float* dst = y.data_as<float>();
#pragma omp parallel for schedule(static) if (x.numel() >= kParallelMinElements)
  for (i64 r = 0; r < rows; ++r) {
    const float* s = src + r * cols;
    float* d = dst + r * cols;
    float mx = -INFINITY;
    bool nan = false;
    for (i64 j = 0; j < cols; ++j) {
      nan |= std::isnan(s[j]);
      mx = std::max(mx, s[j] * scale);
    }
    if (nan) {
      std::fill(d, d + cols, NAN);
      continue;
    }
    float sum = 0.0f;
    for (i64 j = 0; j < cols; ++j) sum += (d[j] = std::exp(s[j] * scale - mx));
    const float inv = 1.0f / sum;
    for (i64 j = 0; j < cols; ++j) d[j] *= inv;
  }
  return y;
}

Tensor upsample_nearest2x(const Tensor& x, int parts) {
  const i64 t = x.dim(0), h = x.dim(1), w = x.dim(2), c = x.dim(3) / parts;
  Tensor y = Tensor::empty({t * parts, 2 * h, 2 * w, c}, DType::F32);
  const float* src = x.data_as<float>();
  float* dst = y.data_as<float>();
  // Output row (frame fo, row oy) copies input row oy / 2 of frame fo / parts, channel block fo % parts.
#pragma omp parallel for schedule(static) if (y.numel() >= kParallelMinElements)
  for (i64 row = 0; row < t * parts * 2 * h; ++row) {
    const i64 oy = row % (2 * h), fo = row / (2 * h), f = fo / parts, a = fo % parts;
    const float* s = src + ((f * h + oy / 2) * w) * parts * c + a * c;
    float* d = dst + row * 2 * w * c;
    for (i64 ix = 0; ix < w; ++ix) {
      const float* p = s + ix * parts * c;
      std::copy(p, p + c, d + 2 * ix * c);
      std::copy(p, p + c, d + (2 * ix + 1) * c);
    }
  }
  return y;
}

void add_dup_up(Tensor& out, const Tensor& in, int ft, int fs, int drop) {
  const i64 c_in = in.dim(3), h = in.dim(1), w = in.dim(2);
  const i64 t_out = out.dim(0), oh = out.dim(1), ow = out.dim(2), c_out = out.dim(3);
  const i64 repeats = c_out * ft * fs * fs / c_in;
  const float* src = in.data_as<float>();
  float* dst = out.data_as<float>();
#pragma omp parallel for schedule(static) if (out.numel() >= kParallelMinElements)
  for (i64 row = 0; row < t_out * oh; ++row) {
    const i64 oy = row % oh, to = row / oh + drop;
    const i64 t = to / ft, a = to % ft, p = oy % fs;
    const float* s = src + (t * h + oy / fs) * w * c_in;
    float* d = dst + row * ow * c_out;
    for (i64 ox = 0; ox < ow; ++ox) {
      const i64 q = ox % fs;
      const float* sp = s + (ox / fs) * c_in;
      float* dp = d + ox * c_out;
      for (i64 co = 0; co < c_out; ++co) dp[co] += sp[(((co * ft + a) * fs + p) * fs + q) / repeats];
    }
  }
}

void write_unpatchified_frames(const Tensor& chunk, int patch, Tensor& video, i64 b, i64 t0, bool clamp) {
  const i64 n = chunk.dim(0), h = chunk.dim(1), w = chunk.dim(2), cpp = chunk.dim(3);
  const i64 channels = video.dim(1), frames = video.dim(2), vh = video.dim(3), vw = video.dim(4);
  const float* src = chunk.data_as<float>();
  float* dst = video.data_as<float>();
#pragma omp parallel for collapse(2) schedule(static) if (chunk.numel() >= kParallelMinElements)
  for (i64 c = 0; c < channels; ++c)
    for (i64 f = 0; f < n; ++f) {
      float* d = dst + ((b * channels + c) * frames + t0 + f) * vh * vw;
      for (i64 Y = 0; Y < vh; ++Y)
        for (i64 X = 0; X < vw; ++X) {
          // Patch index (pa, pb) = (X % p, Y % p): the first runs along the width.
          const i64 pa = X % patch, pb = Y % patch;
          const float v = src[((f * h + Y / patch) * w + X / patch) * cpp + c * patch * patch + pa * patch + pb];
          d[Y * vw + X] = clamp ? std::clamp(v, -1.0f, 1.0f) : v;  // std::clamp keeps a NaN
        }
    }
}

Tensor video_to_rgb_frames(const Tensor& video, i64 first, i64 count) {
  const i64 c = video.dim(1), h = video.dim(3), w = video.dim(4), plane = video.dim(2) * h * w, pixels = count * h * w;
  Tensor frames = Tensor::empty({count, h, w, c}, DType::F32);
  const float* src = video.data_as<float>() + first * h * w;
  float* dst = frames.data_as<float>();
  // Pixel-major so each thread writes a contiguous run; clamped when finite, NaN and Inf kept.
#pragma omp parallel for schedule(static) if (pixels * c >= kParallelMinElements)
  for (i64 i = 0; i < pixels; ++i)
    for (i64 ch = 0; ch < c; ++ch) {
      const float v = src[ch * plane + i] * 0.5f + 0.5f;
      dst[i * c + ch] = std::isfinite(v) ? std::clamp(v, 0.0f, 1.0f) : v;
    }
  return frames;
}

}  // namespace dattn::ops::cpu
