// ops::CausalConv3d with CausalPad::Replicate (HunyuanVideo-1.5's causal convolution): the stream's first
// frame stands in for the frames before it, and each frame's edge pixels for those around it. The CPU
// kernel clamps its reads; cuDNN pads only with zeros, so on CUDA the stream is written padded first.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "dattn/core/error.h"
#include "dattn/ops/conv.h"
#include "ops/checks.h"
#include "ops/conv_stream.h"
#include "ops/cpu/conv3d.h"
#ifdef DATTN_WITH_CUDA
#include "ops/cuda/conv3d.h"
#include "ops/cuda/frame_kernels.h"
#endif

namespace dattn::ops {
namespace {

using i64 = std::int64_t;

// `n` copies of frame [1, H, W, C]: the causal padding before a stream's first frame.
Tensor repeat_frame(const Tensor& frame, i64 n) {
  Tensor out = Tensor::empty({n, frame.dim(1), frame.dim(2), frame.dim(3)}, frame.dtype(), frame.device());
  for (i64 i = 0; i < n; ++i) out.narrow0(i, 1).copy_from(frame);
  return out;
}

}  // namespace

// `src` is the convolution's input (the norm prologue already applied) in the compute dtype, checked by
// forward().
Tensor CausalConv3d::forward_replicate(const Tensor& src, CausalConvCache* cache) const {
  const i64 frames = src.dim(0), h = src.dim(1), w = src.dim(2), pad = kt_ - 1;
  const DType cd = compute_dtype_;
  if (frames == 0) return Tensor::empty({0, h, w, cout_}, cd, device_);
  // Before the first chunk the stream's past is its first frame, repeated: from then on the cache always
  // holds kt - 1 frames.
  Tensor tail;
  if (pad > 0) tail = cache->tail.defined() ? cache->tail : repeat_frame(src.narrow0(0, 1), pad);
  if (tail.defined() && tail.dim(0) != pad)
    throw std::logic_error("CausalConv3d (replicate): cached " + tail.describe() + " is not kt - 1 frames");
  Tensor out = Tensor::empty({frames, h, w, cout_}, cd, device_);

  if (device_ == Device::CPU) {
    const i64 frame = h * w * cin_;
    std::vector<const float*> in(static_cast<std::size_t>(pad + frames));
    for (i64 i = 0; i < pad; ++i) in[i] = tail.data_as<float>() + i * frame;
    for (i64 t = 0; t < frames; ++t) in[pad + t] = src.data_as<float>() + t * frame;
    std::vector<float*> outs(static_cast<std::size_t>(frames));
    for (i64 t = 0; t < frames; ++t) outs[t] = out.data_as<float>() + t * h * w * cout_;
    cpu::Conv3dGeometry g;
    g.cin = cin_, g.cout = cout_, g.kt = kt_, g.k = k_, g.h = static_cast<int>(h), g.w = static_cast<int>(w);
    g.replicate = true;
    cpu::conv3d_frames(g, weight_.data_as<float>(), bias_.data_as<float>(), in.data(), static_cast<int>(in.size()),
                       outs.data());
  } else {
#ifdef DATTN_WITH_CUDA
    // The stream [tail; src] with each frame padded by p = (k - 1) / 2 edge pixels: cuDNN then convolves
    // without padding.
    const int p = (k_ - 1) / 2;
    const i64 padded_frame = (h + 2 * p) * (w + 2 * p) * cin_;
    const std::size_t es = dtype_size(cd);
    Tensor stream = Tensor::empty({pad + frames, h + 2 * p, w + 2 * p, cin_}, cd, Device::CUDA);
    char* base = static_cast<char*>(stream.data());
    if (pad > 0) cuda::pad_frames_replicate(tail.data(), base, es, pad, h, w, cin_, p);
    cuda::pad_frames_replicate(src.data(), base + pad * padded_frame * es, es, frames, h, w, cin_, p);
    cuda::ConvGeometry g;
    g.frames_in = static_cast<int>(pad + frames), g.h = static_cast<int>(h), g.w = static_cast<int>(w);
    g.cin = cin_, g.cout = cout_, g.kt = kt_, g.k = k_, g.tf32 = math_ == ConvMath::TF32, g.bf16 = cd == DType::BF16;
    g.prepadded = true;
    cuda::conv3d(g, stream.data(), weight_.data(), bias_.data_as<float>(), out.data());
#else
    detail::no_kernel("CausalConv3d", device_);
#endif
  }
  if (pad > 0) cache->tail = detail::conv_stream_tail(tail, src, pad);
  return out;
}

}  // namespace dattn::ops
