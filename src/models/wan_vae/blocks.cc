// Residual, attention, resample and up blocks of the Wan VAE decoder.
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "models/wan_vae/frame_ops.h"
#include "models/wan_vae/layers.h"
#include "ops/cpu/conv3d.h"

namespace dattn::wan_vae {

ResidualBlock::ResidualBlock(WeightStore& store, const std::string& name, int in_dim, int out_dim,
                             SlotCounter& slots)
    : norm1_(store, name + ".norm1", in_dim, false),
      norm2_(store, name + ".norm2", out_dim, false),
      conv1_(store, name + ".conv1", in_dim, out_dim, 3, 3, slots),
      conv2_(store, name + ".conv2", out_dim, out_dim, 3, 3, slots) {
  if (in_dim != out_dim) shortcut_.emplace_back(store, name + ".conv_shortcut", in_dim, out_dim, 1, 1, slots);
}

Tensor ResidualBlock::forward(const Tensor& x, FrameCache& cache) const {
  const Tensor h = shortcut_.empty() ? x : shortcut_[0].forward(x, cache);
  Tensor y = conv1_.forward(norm1_.forward(x, /*silu=*/true), cache);
  y = conv2_.forward(norm2_.forward(y, /*silu=*/true), cache);  // dropout is the identity at inference
  add_inplace(y, h);
  return y;
}

AttentionBlock::AttentionBlock(WeightStore& store, const std::string& name, int dim)
    : dim_(dim),
      norm_(store, name + ".norm", dim, true),
      to_qkv_(store, name + ".to_qkv", dim, 3 * dim, 1),
      proj_(store, name + ".proj", dim, dim, 1) {}

Tensor AttentionBlock::forward(const Tensor& x) const {
  const Tensor normed = norm_.forward(x, /*silu=*/false);
  const std::int64_t frames = x.dim(0), h = x.dim(2), w = x.dim(3), pixels = h * w, c = dim_;
  Tensor out = new_frames(frames, c, h, w);
  std::vector<float> qkv(3 * c * pixels), attended(c * pixels);
  // Blocks of queries, one per thread at a time, with score rows of at most 64 MB over all threads.
  const int threads = omp_get_max_threads();
  const std::int64_t block = std::clamp<std::int64_t>(
      std::min((std::int64_t{16} << 20) / (pixels * threads), (pixels + threads - 1) / threads), 1, pixels);
  const std::int64_t blocks = (pixels + block - 1) / block;
  std::vector<float> scores(threads * block * pixels);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c));
  const ops::BlasSingleThread single_blas;  // threads split the queries (see conv3d.h)
  for (std::int64_t f = 0; f < frames; ++f) {
    // Channels [0, c) are q, [c, 2c) k, [2c, 3c) v, each [c, pixels]: one head of width c.
    to_qkv_.forward(frame_ptr(normed, f), qkv.data(), static_cast<int>(h), static_cast<int>(w));
    const float *q = qkv.data(), *k = q + c * pixels, *v = k + c * pixels;
#pragma omp parallel for schedule(dynamic) if (blocks > 1 && pixels * pixels * c >= kParallelMinElements * 16)
    for (std::int64_t b = 0; b < blocks; ++b) {
      const std::int64_t q0 = b * block, nq = std::min(block, pixels - q0);
      float* s = scores.data() + omp_get_thread_num() * block * pixels;
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nq, pixels, c, scale, q + q0, pixels, k, pixels, 0.0f, s,
                  pixels);
      for (std::int64_t i = 0; i < nq; ++i) {
        float* row = s + i * pixels;
        const float mx = *std::max_element(row, row + pixels);
        float sum = 0.0f;
        for (std::int64_t j = 0; j < pixels; ++j) sum += (row[j] = std::exp(row[j] - mx));
        const float inv = 1.0f / sum;
        for (std::int64_t j = 0; j < pixels; ++j) row[j] *= inv;
      }
      // attended[:, q0 + i] = sum_j v[:, j] * p[i, j]
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, c, nq, pixels, 1.0f, v, pixels, s, pixels, 0.0f,
                  attended.data() + q0, pixels);
    }
    proj_.forward(attended.data(), frame_ptr(out, f), static_cast<int>(h), static_cast<int>(w));
  }
  add_inplace(out, x);
  return out;
}

Resample::Resample(WeightStore& store, const std::string& name, int dim, int out_dim, bool temporal,
                   SlotCounter& slots)
    : dim_(dim), temporal_(temporal), conv_(store, name + ".resample.1", dim, out_dim, 3) {
  if (temporal) {
    time_conv_.emplace_back(store, name + ".time_conv", dim, 2 * dim, 3, 1, slots);
    slot_ = slots.take();
  }
}

Tensor Resample::forward(const Tensor& x, FrameCache& cache) const {
  Tensor src = x;
  if (temporal_) {
    if (!cache.started[slot_]) {
      // The first chunk is not doubled in time (one latent frame decodes to one video frame), and the
      // time conv's stream starts with the next chunk.
      cache.started[slot_] = true;
    } else {
      // [T, 2*dim, H, W] holds frame 2t in channels [0, dim) and frame 2t+1 in [dim, 2*dim) of frame t,
      // which in frame-major layout is already [2T, dim, H, W].
      src = time_conv_[0].forward(x, cache).reshape({2 * x.dim(0), dim_, x.dim(2), x.dim(3)});
    }
  }
  const std::int64_t frames = src.dim(0), h = src.dim(2), w = src.dim(3);
  Tensor out = new_frames(frames, conv_.cout(), 2 * h, 2 * w);
  std::vector<float> up(dim_ * 4 * h * w);  // one upsampled frame at a time keeps memory at one frame
  for (std::int64_t f = 0; f < frames; ++f) {
    upsample_nearest2x(frame_ptr(src, f), up.data(), dim_, h, w);
    conv_.forward(up.data(), frame_ptr(out, f), static_cast<int>(2 * h), static_cast<int>(2 * w));
  }
  return out;
}

UpBlock::UpBlock(WeightStore& store, const std::string& name, int in_dim, int out_dim, int num_res_blocks,
                 bool residual, bool up, bool temporal, SlotCounter& slots) {
  int dim = in_dim;
  for (int i = 0; i <= num_res_blocks; ++i) {
    resnets_.emplace_back(store, name + ".resnets." + std::to_string(i), dim, out_dim, slots);
    dim = out_dim;
  }
  if (!up) return;
  // Wan2.2's residual blocks keep the width through the upsampler; Wan2.1's halve it there.
  if (residual)
    upsampler_.emplace_back(store, name + ".upsampler", out_dim, out_dim, temporal, slots);
  else
    upsampler_.emplace_back(store, name + ".upsamplers.0", out_dim, out_dim / 2, temporal, slots);
  dup_shortcut_ = residual;
  factor_t_ = temporal ? 2 : 1;
}

Tensor UpBlock::forward(const Tensor& x, FrameCache& cache, bool first_chunk) const {
  Tensor h = x;
  for (const auto& r : resnets_) h = r.forward(h, cache);
  if (!upsampler_.empty()) h = upsampler_[0].forward(h, cache);
  if (dup_shortcut_) add_dup_up(h, x, factor_t_, 2, first_chunk);
  return h;
}

}  // namespace dattn::wan_vae
