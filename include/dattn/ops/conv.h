#pragma once
// The causal 3D convolution of the causal video VAEs (diffusers' WanCausalConv3d and
// HunyuanVideo15CausalConv3d), on channels-last frames, with the frame cache that lets a video be decoded
// chunk by chunk.
//
// Frames: a float32 tensor [T, H, W, C] on the CPU or CUDA; channels-last because cuDNN's tensor-core
// convolutions take NDHWC, a channel norm is then a contiguous reduction per pixel, and a frame's pixels
// are the token rows of a VAE's attention. Decoding is streamed: each call continues the stream of the
// frames given to earlier calls, and the kt - 1 frames a call needs from before its chunk come from a
// CausalConvCache (zeros where the stream so far is shorter, which is the causal zero padding; or, with
// CausalPad::Replicate, copies of the stream's first frame).
//
// CPU: im2col + OpenBLAS sgemm over OpenMP threads (OpenBLAS single-threaded meanwhile); zero frames are
// skipped, not multiplied. CUDA: cuDNN, one plan per geometry and run context, on the context's stream.
#include "dattn/core/tensor.h"

namespace dattn::ops {

// The arithmetic of the CUDA convolutions. TF32 (the default, as PyTorch runs convolutions): tensor
// cores round each operand to 10 mantissa bits and accumulate in float32. FP32: float32 FMA
// algorithms only, within ~1e-6 of the CPU, several times slower. The CPU is always FP32.
enum class ConvMath { TF32, FP32 };

// How a causal convolution pads. Zeros (diffusers' WanCausalConv3d): zero frames before the stream and
// zeros around each frame. Replicate (HunyuanVideo15CausalConv3d, F.pad mode "replicate"): the stream's
// first frame repeated kt - 1 times before it and each frame's edge pixels repeated around it.
enum class CausalPad { Zeros, Replicate };

// What a causal convolution carries from one chunk to the next (an entry of diffusers' feat_cache): the
// last min(kt - 1, frames seen) input frames [n, H, W, cin] on the convolution's device (with
// CausalPad::Replicate always kt - 1: the repeated first frame counts); undefined before the first chunk.
struct CausalConvCache {
  Tensor tail;
};

class CausalConv3d {
 public:
  CausalConv3d() = default;
  // weight: PyTorch's layout [cout, cin, kt, k, k] (nn.Conv3d) or [cout, cin, k, k] (nn.Conv2d, kt = 1),
  // k odd; bias [cout] or undefined. Any float dtype on any device: packed once into the layout the
  // device's kernels read and kept in float32 on `device`. Throws UserError naming the bad argument.
  CausalConv3d(const Tensor& weight, const Tensor& bias, Device device, ConvMath math = ConvMath::TF32,
               CausalPad pad = CausalPad::Zeros);

  // x [T, H, W, cin] float32 on the convolution's device -> [T, H, W, cout]: stride 1, padding (k - 1) / 2
  // in space, causal in time, both as CausalPad says. kt > 1 needs `cache` (updated to the stream's new tail);
  // kt == 1 ignores it (may be null). With `norm_gain` ([cin]) the convolution reads
  // SiLU(normalize_channels(x, norm_gain)) instead of x (on CUDA written straight into the stream
  // buffer: one pass over the activations less).
  Tensor forward(const Tensor& x, CausalConvCache* cache, const Tensor& norm_gain = Tensor()) const;

  int cin() const { return cin_; }
  int cout() const { return cout_; }
  int kt() const { return kt_; }
  int k() const { return k_; }
  Device device() const { return device_; }
  CausalPad pad() const { return pad_; }

 private:
  Tensor forward_replicate(const Tensor& src, CausalConvCache* cache) const;

  CausalPad pad_ = CausalPad::Zeros;
  int cin_ = 0, cout_ = 0, kt_ = 1, k_ = 1;
  ConvMath math_ = ConvMath::TF32;
  Device device_ = Device::CPU;
  Tensor weight_;  // [cout, kt, k, k, cin] float32: per output channel, the taps of one frame together
  Tensor bias_;    // [cout] float32, zeros when the layer has no bias
};

}  // namespace dattn::ops
