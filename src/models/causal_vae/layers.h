#pragma once
// The layers the causal video VAEs share (Wan's and HunyuanVideo-1.5's decoders), written once for the
// CPU and CUDA: each holds its weights (read from a WeightStore under diffusers' names, placed on the
// decoder's device) and runs on channels-last frames [T, H, W, C] float32 through the device-dispatched
// ops (ops/conv.h, ops/norm.h, ...).
//
// Decoding is streamed: every causal convolution continues the stream of the chunks before, the frames it
// needs from them kept in its FrameCache slot (diffusers' feat_cache), one slot per convolution.
#include <string>
#include <vector>

#include "dattn/core/tensor.h"
#include "dattn/io/weight_store.h"
#include "dattn/ops/conv.h"

namespace dattn::causal_vae {

// The dtypes a causal VAE decoder runs in: F32 on either device, BF16 on CUDA. A UserError naming `model`
// otherwise (the CPU decoder has no bf16 path: its im2col + sgemm convolutions compute in fp32).
void require_vae_dtype(const std::string& model, Device device, DType dtype);

struct FrameCache {
  std::vector<ops::CausalConvCache> convs;  // per slot: the causal convolution's tail
  std::vector<bool> started;                // per slot: whether a chunk went through (an upsampler's first-frame mark)
  explicit FrameCache(int slots) : convs(slots), started(slots, false) {}
};

// Hands out cache slots while the model is built, as diffusers counts its causal convolutions.
struct SlotCounter {
  int next = 0;
  int take() { return next++; }
};

// What every layer constructor needs: the checkpoint, where the weights go, the convolutions' math, the
// slot counter, and the family's causal convolution: its padding, and the submodule that holds its
// nn.Conv3d ("" for Wan, whose WanCausalConv3d is one; ".conv" for HunyuanVideo15CausalConv3d), and the
// activations' dtype (F32, or BF16 on CUDA).
struct LayerInit {
  WeightStore& store;
  Device device;
  ops::ConvMath math;
  SlotCounter& slots;
  ops::CausalPad pad = ops::CausalPad::Zeros;
  std::string causal_conv_suffix;
  DType dtype = DType::F32;
};

// A checkpoint convolution with kernel (kt, k, k) whose weight and bias are `name`.weight / .bias:
// CausalConv3d (kt > 1 keeps a cache slot), a 1x1x1 CausalConv3d, or nn.Conv2d (`conv2d`: weight stored as
// [cout, cin, k, k]) applied per frame. Padded as init.pad says.
class Conv {
 public:
  Conv(LayerInit& init, const std::string& name, int cin, int cout, int kt, int k, bool conv2d = false);
  // With `norm_gain` the convolution reads SiLU(normalize_channels(x, norm_gain)) (see ops::CausalConv3d).
  // The result has the activations' dtype (a bf16 decoder's convolution that computes in float32, its
  // channels not multiples of 8, is rounded to bf16 after it).
  Tensor forward(const Tensor& x, FrameCache& cache, const Tensor& norm_gain = Tensor()) const;
  // The same in the convolution's compute dtype, unrounded: a decoder's conv_out, whose output goes to the
  // float32 video.
  Tensor forward_unrounded(const Tensor& x, FrameCache& cache, const Tensor& norm_gain = Tensor()) const;
  int cout() const { return op_.cout(); }

 private:
  ops::CausalConv3d op_;
  int slot_ = -1;
};

// The RMS norm over channels of both families (WanRMS_norm, HunyuanVideo15RMS_norm): only gamma is
// stored (diffusers' bias is the constant 0 in the decoders); the gain kept is sqrt(dim) * gamma.
// `images`: gamma stored as [dim, 1, 1] (else [dim, 1, 1, 1]).
class RmsNorm {
 public:
  RmsNorm(LayerInit& init, const std::string& name, int dim, bool images);
  Tensor forward(const Tensor& x, bool silu) const;
  const Tensor& gain() const { return gain_; }

 private:
  Tensor gain_;  // [dim] float32
};

// The residual block of both families (WanResidualBlock, HunyuanVideo15ResnetBlock): norm1, SiLU, conv1,
// norm2, SiLU, (dropout), conv2, plus a 1x1x1 shortcut conv (`conv_shortcut`, a plain nn.Conv3d) when the
// width changes.
class ResidualBlock {
 public:
  ResidualBlock(LayerInit& init, const std::string& name, int in_dim, int out_dim);
  Tensor forward(const Tensor& x, FrameCache& cache) const;

 private:
  RmsNorm norm1_, norm2_;
  Conv conv1_, conv2_;
  std::vector<Conv> shortcut_;  // empty or one
};

}  // namespace dattn::causal_vae
