#pragma once
// The layers of the Wan VAE decoder of its own (attention, resample, up blocks), on the shared causal VAE
// layers (models/causal_vae/layers.h: one tree for the CPU and CUDA, streamed through frame caches).
#include <cstdint>
#include <string>
#include <vector>

#include "dattn/core/tensor.h"
#include "models/causal_vae/layers.h"

namespace dattn::wan_vae {

// The layers Wan shares with the other causal VAEs (models/causal_vae/layers.h).
using causal_vae::Conv;
using causal_vae::FrameCache;
using causal_vae::LayerInit;
using causal_vae::ResidualBlock;
using causal_vae::RmsNorm;
using causal_vae::SlotCounter;

// WanAttentionBlock: single-head self-attention over the pixels of each frame, plus the input; queries in
// blocks whose score rows fit score_bytes.
class AttentionBlock {
 public:
  AttentionBlock(LayerInit& init, const std::string& name, int dim);
  Tensor forward(const Tensor& x, std::int64_t score_bytes) const;
  static constexpr std::int64_t kScoreBytes = std::int64_t{256} << 20;

 private:
  int dim_;
  RmsNorm norm_;
  Tensor wq_, wk_, wv_, bq_, bk_;  // [dim, dim] / [dim] slices of to_qkv
  Tensor wp_, bp_;                 // proj, its bias with proj(bv) folded in (softmax rows sum to 1)
};

// WanResample in its decoder modes: "upsample2d" (nearest 2x in space then a 3x3 conv per frame) and
// "upsample3d" (first a causal time conv that doubles the frames, except on the first chunk).
class Resample {
 public:
  Resample(LayerInit& init, const std::string& name, int dim, int out_dim, bool temporal);
  Tensor forward(const Tensor& x, FrameCache& cache) const;

 private:
  bool temporal_;
  Conv conv_;
  std::vector<Conv> time_conv_;  // one when temporal
  int slot_ = -1;                // the "first chunk seen" mark
};

// One decoder stage: WanResidualUpBlock (Wan2.2, with a DupUp3D shortcut when it upsamples) or WanUpBlock
// (Wan2.1): num_res_blocks + 1 residual blocks then an optional Resample.
class UpBlock {
 public:
  UpBlock(LayerInit& init, const std::string& name, int in_dim, int out_dim, int num_res_blocks, bool residual,
          bool up, bool temporal);
  Tensor forward(const Tensor& x, FrameCache& cache, bool first_chunk) const;

 private:
  std::vector<ResidualBlock> resnets_;
  std::vector<Resample> upsampler_;  // empty or one
  bool dup_shortcut_ = false;
  int factor_t_ = 1;
};

}  // namespace dattn::wan_vae
