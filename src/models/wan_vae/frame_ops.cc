#include "models/wan_vae/frame_ops.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace dattn::wan_vae {

using i64 = std::int64_t;

Tensor new_frames(i64 t, i64 c, i64 h, i64 w) { return Tensor::empty({t, c, h, w}, DType::F32); }

Tensor rms_norm(const Tensor& x, const float* gamma, bool silu) {
  const i64 frames = x.dim(0), channels = x.dim(1), plane = x.dim(2) * x.dim(3);
  Tensor y = Tensor::empty(x.shape(), DType::F32);
  const float* src = x.data_as<float>();
  float* dst = y.data_as<float>();
  const float scale = std::sqrt(static_cast<float>(channels));
  constexpr i64 kBlock = 256;  // pixels per task: the channel loop then streams contiguous rows
  const i64 blocks = (plane + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (x.numel() >= kParallelMinElements)
  for (i64 task = 0; task < frames * blocks; ++task) {
    const i64 f = task / blocks, p0 = task % blocks * kBlock, n = std::min(kBlock, plane - p0);
    const float* xs = src + f * channels * plane + p0;
    float* ys = dst + f * channels * plane + p0;
    float inv[kBlock];
    std::fill(inv, inv + n, 0.0f);
    for (i64 c = 0; c < channels; ++c)
      for (i64 i = 0; i < n; ++i) inv[i] += xs[c * plane + i] * xs[c * plane + i];
    // F.normalize divides by max(norm, eps) with eps = 1e-12.
    for (i64 i = 0; i < n; ++i) inv[i] = 1.0f / std::max(std::sqrt(inv[i]), 1e-12f);
    for (i64 c = 0; c < channels; ++c) {
      const float g = scale * gamma[c];
      for (i64 i = 0; i < n; ++i) {
        const float v = xs[c * plane + i] * inv[i] * g;
        ys[c * plane + i] = silu ? v / (1.0f + std::exp(-v)) : v;
      }
    }
  }
  return y;
}

void add_inplace(Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) throw std::logic_error("wan_vae add: " + a.describe() + " vs " + b.describe());
  float* p = a.data_as<float>();
  const float* q = b.data_as<float>();
  const i64 n = a.numel();
#pragma omp parallel for schedule(static) if (n >= kParallelMinElements)
  for (i64 i = 0; i < n; ++i) p[i] += q[i];
}

void upsample_nearest2x(const float* x, float* y, i64 c, i64 h, i64 w) {
#pragma omp parallel for schedule(static) if (c * h * w >= kParallelMinElements)
  for (i64 row = 0; row < c * h; ++row) {
    const float* s = x + row * w;
    float* d0 = y + row * 4 * w;  // output rows 2*iy and 2*iy+1 of the same channel
    for (i64 i = 0; i < w; ++i) d0[2 * i] = d0[2 * i + 1] = s[i];
    std::copy(d0, d0 + 2 * w, d0 + 2 * w);
  }
}

void add_dup_up(Tensor& out, const Tensor& in, int factor_t, int factor_s, bool first_chunk) {
  const i64 t_in = in.dim(0), c_in = in.dim(1), h = in.dim(2), w = in.dim(3);
  const i64 c_out = out.dim(1), factor = i64{factor_t} * factor_s * factor_s;
  const i64 drop = first_chunk ? factor_t - 1 : 0;
  if ((c_out * factor) % c_in != 0 || out.dim(0) != t_in * factor_t - drop || out.dim(2) != h * factor_s ||
      out.dim(3) != w * factor_s)
    throw std::logic_error("wan_vae DupUp3D: input " + in.describe() + " does not map onto " + out.describe());
  // repeat_interleave(repeats) then a view as [c_out, factor_t, factor_s, factor_s, ...]: output channel co
  // at time phase a and pixel phase (p, q) reads input channel (((co * ft + a) * fs + p) * fs + q) / repeats.
  const i64 repeats = c_out * factor / c_in;
  const i64 oh = h * factor_s, ow = w * factor_s;
  const i64 rows = out.dim(0) * c_out * oh;
  const float* src = in.data_as<float>();
  float* dst = out.data_as<float>();
#pragma omp parallel for schedule(static) if (out.numel() >= kParallelMinElements)
  for (i64 r = 0; r < rows; ++r) {
    const i64 oy = r % oh, co = r / oh % c_out, to = r / oh / c_out + drop;
    const i64 t = to / factor_t, a = to % factor_t, y = oy / factor_s, p = oy % factor_s;
    float* d = dst + r * ow;
    for (i64 q = 0; q < factor_s; ++q) {
      const i64 ci = (((co * factor_t + a) * factor_s + p) * factor_s + q) / repeats;
      const float* s = src + ((t * c_in + ci) * h + y) * w;
      for (i64 x = 0; x < w; ++x) d[x * factor_s + q] += s[x];
    }
  }
}

}  // namespace dattn::wan_vae
