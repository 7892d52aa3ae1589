#pragma once
// The CUDA kernel of ops::CausalConv3d through cuDNN (conv3d.cu). Plain C++ header.
#include <cstddef>

namespace dattn::ops::cuda {

// A stride-1 3D cross-correlation over channels-last frames (NDHWC with N = 1), zero padding (k - 1) / 2
// in space (none when `prepadded`) and none in time: the caller puts a causal convolution's cached or zero frames in front.
struct ConvGeometry {
  int frames_in = 1, h = 0, w = 0;  // input frames and frame size; output frames = frames_in - kt + 1
  int cin = 0, cout = 0;
  int kt = 1, k = 1;  // kernel (kt, k, k)
  bool tf32 = true;   // float32 data: TF32 tensor-core math allowed (else exact fp32 FMA algorithms only)
  // x, weight and y bfloat16 (cuDNN's PSEUDO_BFLOAT16_CONFIG: float32 compute type, so products accumulate
  // in float32 and y is rounded once; tensor-core math; `tf32` then has no effect). cin and cout must be
  // multiples of 8 (the NDHWC tensor-core kernels' alignment): ops::CausalConv3d runs others in float32.
  bool bf16 = false;
  // The input frames are already padded, (h + k - 1) x (w + k - 1) (CausalPad::Replicate): no padding.
  bool prepadded = false;
};

// y [frames_in - kt + 1, h, w, cout] = conv(x [frames_in, h, w, cin], weight [cout, kt, k, k, cin]) + bias[cout].
// Device pointers, x, weight and y float32 (or bfloat16 with g.bf16), bias float32 (added in float32 to
// the rounded y by a kernel of ours: a bf16 y is rounded twice), asynchronous on the current run
// context's stream, with that context's cuDNN handle. The algorithm is chosen once per geometry and
// context (cudnnGetConvolutionForwardAlgorithm_v7) and cached; the workspace comes from the device pool
// per call. Throws std::runtime_error naming the cuDNN call, its status and the geometry when cuDNN fails
// (a geometry with no usable algorithm lists every candidate the heuristic offered).
void conv3d(const ConvGeometry& g, const void* x, const void* weight, const float* bias, void* y);

// Makes the current context's cuDNN handle now, if it has none (else the first convolution does),
// holding the context's lock only to store it: safe beside other work on the context.
void prepare_conv3d();

// The largest workspace a convolution algorithm may take: faster algorithms needing more are skipped,
// unless no usable algorithm fits (then the one needing the least is taken).
inline constexpr std::size_t kMaxConvWorkspaceBytes = std::size_t{512} << 20;

}  // namespace dattn::ops::cuda
