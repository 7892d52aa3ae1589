#pragma once
// The layers of the HunyuanVideo-1.5 VAE decoder of its own (frame-causal attention, DC-AE up-sampler, up
// blocks) on the shared causal VAE layers (models/causal_vae/layers.h: Conv, RmsNorm, ResidualBlock), one
// tree for the CPU and CUDA on channels-last frames [T, H, W, C] float32, streamed through frame caches.
#include <cstdint>
#include <string>
#include <vector>

#include "dattn/core/tensor.h"
#include "models/causal_vae/layers.h"

namespace dattn::hunyuanvideo15_vae {

using causal_vae::Conv;
using causal_vae::FrameCache;
using causal_vae::LayerInit;
using causal_vae::ResidualBlock;
using causal_vae::RmsNorm;
using causal_vae::SlotCounter;

// The attention block's keys and values of every frame so far, [frames * pixels, dim] rows each, made
// for the whole video when the decode starts (frame f's rows at f * pixels).
struct KeyValueCache {
  Tensor keys, values;
  std::int64_t frames = 0;  // frames written
};

// HunyuanVideo15AttnBlock: one head as wide as the channels; the pixels of frame f attend to every pixel
// of frames 0..f (diffusers' frame-causal mask, here by attending to that prefix of the cache: no mask is
// made). Matrix products in float32 (ops::linear: no TF32 on CUDA); queries in blocks whose score rows
// fit score_bytes.
class AttentionBlock {
 public:
  AttentionBlock(LayerInit& init, const std::string& name, int dim);
  // x [n, H, W, dim]: the next n frames; appends their keys and values to `cache`.
  Tensor forward(const Tensor& x, KeyValueCache& cache, std::int64_t score_bytes) const;
  // A cache for `frames` frames of `pixels` pixels on the block's device.
  KeyValueCache new_cache(std::int64_t frames, std::int64_t pixels) const;
  static constexpr std::int64_t kScoreBytes = std::int64_t{256} << 20;

 private:
  int dim_;
  Device device_;
  RmsNorm norm_;
  Tensor wq_, wk_, wv_, wo_, bq_, bk_, bv_, bo_;  // to_q, to_k, to_v, proj_out as [dim, dim] / [dim]
};

// HunyuanVideo15Upsample: a causal 3x3x3 conv to 4 x factor_t x out channels, unpacked into 2x2 pixels
// and factor_t frames, plus the input with its channels repeated (ops::dcae_upsample). The stream's first
// frame is not doubled in time (one latent frame decodes to one video frame).
class Upsampler {
 public:
  Upsampler(LayerInit& init, const std::string& name, int in_dim, int out_dim, bool temporal);
  Tensor forward(const Tensor& x, FrameCache& cache) const;

 private:
  int factor_t_;
  Conv conv_;
  int slot_ = -1;  // the "first frame seen" mark
};

// HunyuanVideo15UpBlock3D: layers_per_block + 1 residual blocks, then an optional up-sampler.
class UpBlock {
 public:
  UpBlock(LayerInit& init, const std::string& name, int in_dim, int out_dim, int num_resnets, int up_dim, bool up,
          bool temporal);
  Tensor forward(const Tensor& x, FrameCache& cache) const;

 private:
  std::vector<ResidualBlock> resnets_;
  std::vector<Upsampler> upsampler_;  // empty or one
};

}  // namespace dattn::hunyuanvideo15_vae
