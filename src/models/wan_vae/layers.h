#pragma once
// The layers of the Wan VAE decoder, each holding its weights (read from a WeightStore under diffusers'
// names) and running on one chunk of frames (see frame_ops.h for the layout).
//
// Decoding is streamed: the decoder is called once per latent frame and every causal convolution sees
// the concatenation of all chunks, with kt - 1 zero frames before the first. The frames a convolution
// needs from earlier chunks live in a FrameCache slot (diffusers' feat_cache), one slot per convolution.
#include <string>
#include <vector>

#include "dattn/core/tensor.h"
#include "dattn/io/weight_store.h"

namespace dattn::wan_vae {

struct FrameCache {
  std::vector<Tensor> tail;  // per slot: the last min(kt - 1, frames seen) input frames, [n, C, H, W]
  std::vector<bool> started;  // per slot: whether a chunk went through (the "Rep" mark of upsample3d)
  explicit FrameCache(int slots) : tail(slots), started(slots, false) {}
};

// Hands out cache slots while the model is built, like diffusers counts its causal convolutions.
struct SlotCounter {
  int next = 0;
  int take() { return next++; }
};

// Conv3d with kernel (kt, k, k), spatial padding (k - 1) / 2, causal time padding kt - 1 on the left.
// kt > 1 keeps a cache slot; kt == 1 is stateless.
class CausalConv3d {
 public:
  CausalConv3d(WeightStore& store, const std::string& name, int cin, int cout, int kt, int k, SlotCounter& slots);
  Tensor forward(const Tensor& x, FrameCache& cache) const;
  int cout() const { return cout_; }

 private:
  int cin_, cout_, kt_, k_, slot_ = -1;
  Tensor weight_;  // ops::conv3d_pack_weight layout
  std::vector<float> bias_;
};

// nn.Conv2d (stride 1, padding (k - 1) / 2) applied to one frame.
class Conv2d {
 public:
  Conv2d(WeightStore& store, const std::string& name, int cin, int cout, int k);
  void forward(const float* in, float* out, int h, int w) const;  // [cin, h, w] -> [cout, h, w]
  int cin() const { return cin_; }
  int cout() const { return cout_; }

 private:
  int cin_, cout_, k_;
  Tensor weight_;  // [cout, cin, k, k], which is also the packed layout
  std::vector<float> bias_;
};

// WanRMS_norm: only gamma is stored (diffusers' bias is the constant 0 in the decoder).
class RmsNorm {
 public:
  RmsNorm(WeightStore& store, const std::string& name, int dim, bool images);
  Tensor forward(const Tensor& x, bool silu) const;

 private:
  std::vector<float> gamma_;
};

// WanResidualBlock: norm1, SiLU, conv1, norm2, SiLU, (dropout), conv2, plus a 1x1x1 shortcut conv when
// the width changes.
class ResidualBlock {
 public:
  ResidualBlock(WeightStore& store, const std::string& name, int in_dim, int out_dim, SlotCounter& slots);
  Tensor forward(const Tensor& x, FrameCache& cache) const;

 private:
  RmsNorm norm1_, norm2_;
  CausalConv3d conv1_, conv2_;
  std::vector<CausalConv3d> shortcut_;  // empty or one
};

// WanAttentionBlock: single-head self-attention over the pixels of each frame, plus the input.
class AttentionBlock {
 public:
  AttentionBlock(WeightStore& store, const std::string& name, int dim);
  Tensor forward(const Tensor& x) const;

 private:
  int dim_;
  RmsNorm norm_;
  Conv2d to_qkv_, proj_;
};

// WanResample in its decoder modes: "upsample2d" (nearest 2x in space then a 3x3 conv per frame) and
// "upsample3d" (first a causal time conv that doubles the frames, except on the first chunk).
class Resample {
 public:
  Resample(WeightStore& store, const std::string& name, int dim, int out_dim, bool temporal, SlotCounter& slots);
  Tensor forward(const Tensor& x, FrameCache& cache) const;

 private:
  int dim_;
  bool temporal_;
  Conv2d conv_;
  std::vector<CausalConv3d> time_conv_;  // one when temporal
  int slot_ = -1;                        // the "first chunk seen" mark
};

// One decoder stage: WanResidualUpBlock (Wan2.2, with a DupUp3D shortcut when it upsamples) or WanUpBlock
// (Wan2.1): num_res_blocks + 1 residual blocks then an optional Resample.
class UpBlock {
 public:
  UpBlock(WeightStore& store, const std::string& name, int in_dim, int out_dim, int num_res_blocks, bool residual,
          bool up, bool temporal, SlotCounter& slots);
  Tensor forward(const Tensor& x, FrameCache& cache, bool first_chunk) const;

 private:
  std::vector<ResidualBlock> resnets_;
  std::vector<Resample> upsampler_;  // empty or one
  bool dup_shortcut_ = false;
  int factor_t_ = 1;
};

}  // namespace dattn::wan_vae
