#pragma once
// The layers of the Wan VAE decoder, written once for the CPU and CUDA: each holds its weights (read
// from a WeightStore under diffusers' names, placed on the decoder's device) and runs on channels-last
// frames [T, H, W, C] float32 through the device-dispatched ops (ops/conv.h, ops/frames.h, ...).
//
// Decoding is streamed: every causal convolution continues the stream of the chunks before, the frames it
// needs from them kept in its FrameCache slot (diffusers' feat_cache), one slot per convolution.
#include <cstdint>
#include <string>
#include <vector>

#include "dattn/core/tensor.h"
#include "dattn/io/weight_store.h"
#include "dattn/ops/conv.h"

namespace dattn::wan_vae {

struct FrameCache {
  std::vector<ops::CausalConvCache> convs;  // per slot: the causal convolution's tail
  std::vector<bool> started;                // per slot: whether a chunk went through (upsample3d's "Rep" mark)
  explicit FrameCache(int slots) : convs(slots), started(slots, false) {}
};

// Hands out cache slots while the model is built, as diffusers counts its causal convolutions.
struct SlotCounter {
  int next = 0;
  int take() { return next++; }
};

// What every layer constructor needs: the checkpoint, where the weights go, the convolutions' math, and
// the slot counter.
struct LayerInit {
  WeightStore& store;
  Device device;
  ops::ConvMath math;
  SlotCounter& slots;
};

// A checkpoint convolution with kernel (kt, k, k): CausalConv3d (kt > 1 keeps a cache slot), a 1x1x1
// CausalConv3d, or nn.Conv2d (`conv2d`: weight stored as [cout, cin, k, k]) applied per frame.
class Conv {
 public:
  Conv(LayerInit& init, const std::string& name, int cin, int cout, int kt, int k, bool conv2d = false);
  // With `norm_gain` the convolution reads SiLU(normalize_channels(x, norm_gain)) (see ops::CausalConv3d).
  Tensor forward(const Tensor& x, FrameCache& cache, const Tensor& norm_gain = Tensor()) const;
  int cout() const { return op_.cout(); }

 private:
  ops::CausalConv3d op_;
  int slot_ = -1;
};

// WanRMS_norm over channels: only gamma is stored (diffusers' bias is the constant 0 in the decoder); the
// gain kept is sqrt(dim) * gamma.
class RmsNorm {
 public:
  RmsNorm(LayerInit& init, const std::string& name, int dim, bool images);
  Tensor forward(const Tensor& x, bool silu) const;
  const Tensor& gain() const { return gain_; }

 private:
  Tensor gain_;  // [dim] float32
};

// WanResidualBlock: norm1, SiLU, conv1, norm2, SiLU, (dropout), conv2, plus a 1x1x1 shortcut conv when
// the width changes.
class ResidualBlock {
 public:
  ResidualBlock(LayerInit& init, const std::string& name, int in_dim, int out_dim);
  Tensor forward(const Tensor& x, FrameCache& cache) const;

 private:
  RmsNorm norm1_, norm2_;
  Conv conv1_, conv2_;
  std::vector<Conv> shortcut_;  // empty or one
};

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
  int dim_;
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
