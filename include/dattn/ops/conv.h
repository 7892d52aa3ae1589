#pragma once
// The causal 3D convolution of the causal video VAEs (diffusers' WanCausalConv3d and
// HunyuanVideo15CausalConv3d), on channels-last frames, with the frame cache that lets a video be decoded
// chunk by chunk.
//
// Frames: a float32 tensor [T, H, W, C] on the CPU or CUDA (or bfloat16 on CUDA: see below);
// channels-last because cuDNN's tensor-core convolutions take NDHWC, a channel norm is then a contiguous
// reduction per pixel, and a frame's pixels are the token rows of a VAE's attention. Decoding is streamed: each call continues the stream of the
// frames given to earlier calls, and the kt - 1 frames a call needs from before its chunk come from a
// CausalConvCache (zeros where the stream so far is shorter, which is the causal zero padding; or, with
// CausalPad::Replicate, copies of the stream's first frame).
//
// CPU: im2col + OpenBLAS sgemm over OpenMP threads (OpenBLAS single-threaded meanwhile); zero frames are
// skipped, not multiplied. CUDA: cuDNN, one plan per geometry and run context, on the context's stream.
//
// bfloat16 activations (CUDA only): x, the frame cache, the weights and the output in bf16; cuDNN
// convolves with a float32 compute type (float32 accumulation, the output rounded once, the float32 bias
// added after: a second rounding), the norm prologue computes in float32. A convolution whose cin or cout
// is not a multiple of 8 (cuDNN's bf16 tensor-core kernels need it; in the VAEs only conv_out, to 3 or
// 12 channels) computes in float32 instead: its input converted (by the norm prologue when there is one),
// its weights and cache kept in float32 and its output float32 (`out_dtype()`).
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
  // device's kernels read and kept on `device` in the compute dtype (the bias in float32). `dtype`: the
  // activations' dtype, F32 (both devices) or BF16 (CUDA only). Throws UserError naming the bad argument.
  CausalConv3d(const Tensor& weight, const Tensor& bias, Device device, ConvMath math = ConvMath::TF32,
               CausalPad pad = CausalPad::Zeros, DType dtype = DType::F32);

  // x [T, H, W, cin] of dtype() on the convolution's device -> [T, H, W, cout] of out_dtype(): stride 1,
  // padding (k - 1) / 2 in space, causal in time, both as CausalPad says. kt > 1 needs `cache` (updated to the stream's new tail);
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
  DType dtype() const { return dtype_; }              // the input's
  DType out_dtype() const { return compute_dtype_; }  // the output's (and the cache's)

 private:
  Tensor forward_replicate(const Tensor& src, CausalConvCache* cache) const;

  CausalPad pad_ = CausalPad::Zeros;
  int cin_ = 0, cout_ = 0, kt_ = 1, k_ = 1;
  ConvMath math_ = ConvMath::TF32;
  Device device_ = Device::CPU;
  DType dtype_ = DType::F32, compute_dtype_ = DType::F32;
  Tensor weight_;  // [cout, kt, k, k, cin] compute dtype: per output channel, the taps of one frame together
  Tensor bias_;    // [cout] float32, zeros when the layer has no bias
};

}  // namespace dattn::ops
