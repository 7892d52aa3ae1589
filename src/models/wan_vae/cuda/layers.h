#pragma once
// The layers of the Wan VAE decoder on CUDA, the twins of models/wan_vae/layers.h: same checkpoint
// names, same causal frame-cache semantics (FrameCache, SlotCounter), but activations are float32
// channels-last frames [T, H, W, C] in device memory. Channels-last makes every frame an NDHWC tensor for
// cuDNN's tensor-core convolutions, the channel norm a contiguous reduction per pixel, and a frame's
// pixels the token rows of the mid-block attention.
#include <string>
#include <vector>

#include "dattn/core/tensor.h"
#include "dattn/io/weight_store.h"
#include "models/wan_vae/layers.h"

namespace dattn::wan_vae::gpu {

// A new float32 CUDA tensor, NaN-filled while set_cuda_poison is on; new_frames makes [t, h, w, c].
Tensor new_tensor(const Shape& shape);
Tensor new_frames(std::int64_t t, std::int64_t h, std::int64_t w, std::int64_t c);

class RmsNorm;

// A convolution with kernel (kt, k, k), spatial padding (k - 1) / 2: CausalConv3d when kt > 1 (causal
// time padding kt - 1 from the frame cache, one slot), else a per-frame conv (Conv2d, or a 1x1x1
// CausalConv3d). `conv2d`: the checkpoint stores the weight as [cout, cin, k, k] (nn.Conv2d).
class Conv {
 public:
  Conv(WeightStore& store, const std::string& name, int cin, int cout, int kt, int k, bool conv2d, bool tf32,
       SlotCounter* slots);
  // With `norm` (kt > 1 only) the convolution runs on norm(x) followed by SiLU, which the norm kernel
  // writes straight into the causal stream buffer: no separate normed tensor, one pass less.
  Tensor forward(const Tensor& x, FrameCache& cache, const RmsNorm* norm = nullptr) const;
  Tensor forward(const Tensor& x) const;  // kt == 1 only
  int cout() const { return cout_; }

 private:
  Tensor run(const Tensor& stream, std::int64_t h, std::int64_t w) const;
  int cin_, cout_, kt_, k_, slot_ = -1;
  bool tf32_;
  Tensor weight_;  // [cout, kt, k, k, cin] on CUDA (cuDNN's NDHWC filter layout)
  Tensor bias_;    // [cout] on CUDA
};

// WanRMS_norm over channels, optionally followed by SiLU.
class RmsNorm {
 public:
  RmsNorm(WeightStore& store, const std::string& name, int dim, bool images);
  Tensor forward(const Tensor& x, bool silu) const;
  void apply(const Tensor& x, float* y, bool silu) const;  // into y, x.numel() floats

 private:
  int dim_;
  Tensor gain_;  // sqrt(dim) * gamma, on CUDA
};

class ResidualBlock {
 public:
  ResidualBlock(WeightStore& store, const std::string& name, int in_dim, int out_dim, bool tf32, SlotCounter& slots);
  Tensor forward(const Tensor& x, FrameCache& cache) const;

 private:
  RmsNorm norm1_, norm2_;
  Conv conv1_, conv2_;
  std::vector<Conv> shortcut_;  // empty or one
};

// Single-head attention over the pixels of each frame with cuBLASLt float32 GEMMs (no TF32) and a row
// softmax kernel; queries in blocks so that the score matrix stays under kScoreBytes.
class AttentionBlock {
 public:
  AttentionBlock(WeightStore& store, const std::string& name, int dim);
  Tensor forward(const Tensor& x) const;
  static constexpr std::int64_t kScoreBytes = std::int64_t{256} << 20;

 private:
  int dim_;
  RmsNorm norm_;
  Tensor wq_, wk_, wv_, bq_, bk_;  // [dim, dim] / [dim] slices of to_qkv, on CUDA
  Tensor wp_, bp_;                 // proj, its bias with proj(bv) folded in (softmax rows sum to 1)
};

class Resample {
 public:
  Resample(WeightStore& store, const std::string& name, int dim, int out_dim, bool temporal, bool tf32,
           SlotCounter& slots);
  Tensor forward(const Tensor& x, FrameCache& cache) const;

 private:
  int dim_;
  bool temporal_;
  Conv conv_;
  std::vector<Conv> time_conv_;  // one when temporal
  int slot_ = -1;
};

class UpBlock {
 public:
  UpBlock(WeightStore& store, const std::string& name, int in_dim, int out_dim, int num_res_blocks, bool residual,
          bool up, bool temporal, bool tf32, SlotCounter& slots);
  Tensor forward(const Tensor& x, FrameCache& cache, bool first_chunk) const;

 private:
  std::vector<ResidualBlock> resnets_;
  std::vector<Resample> upsampler_;
  bool dup_shortcut_ = false;
  int factor_t_ = 1;
};

}  // namespace dattn::wan_vae::gpu
