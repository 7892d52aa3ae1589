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
  bool tf32 = true;   // TF32 tensor-core math allowed (else exact fp32 FMA algorithms only)
  // The input frames are already padded, (h + k - 1) x (w + k - 1) (CausalPad::Replicate): no padding.
  bool prepadded = false;
};

// y [frames_in - kt + 1, h, w, cout] = conv(x [frames_in, h, w, cin], weight [cout, kt, k, k, cin]) + bias[cout].
// Device pointers, float32, asynchronous on the current run context's stream, with that context's cuDNN
// handle. The algorithm is chosen once per geometry and context (cudnnGetConvolutionForwardAlgorithm_v7)
// and cached; the workspace comes from the device pool per call. Throws std::runtime_error naming the
// cuDNN call, its status and the geometry when cuDNN fails (a geometry with no usable algorithm lists
// every candidate the heuristic offered).
void conv3d(const ConvGeometry& g, const float* x, const float* weight, const float* bias, float* y);

// The largest workspace a convolution algorithm may take: faster algorithms needing more are skipped,
// unless no usable algorithm fits (then the one needing the least is taken).
inline constexpr std::size_t kMaxConvWorkspaceBytes = std::size_t{512} << 20;

}  // namespace dattn::ops::cuda
