// ops::CausalConv3d: the weights packed once per device, the causal stream of a chunk assembled from the
// frame cache, and the dispatch to the CPU kernel (cpu/conv3d.h) or cuDNN (cuda/conv3d.h).
#include "dattn/ops/conv.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "dattn/core/error.h"
#include "dattn/core/stage_timer.h"
#include "dattn/core/upload.h"
#include "dattn/ops/combine.h"
#include "dattn/ops/norm.h"
#include "ops/checks.h"
#include "ops/conv_stream.h"
#include "ops/conv_weight.h"
#include "ops/cpu/conv3d.h"
#include "ops/cpu/cpu_ops.h"
#ifdef DATTN_WITH_CUDA
#include "ops/cuda/conv3d.h"
#include "ops/cuda/conv_weight_pack.h"
#include "ops/cuda/frame_kernels.h"
#endif

namespace dattn::ops {
namespace {

using i64 = std::int64_t;
constexpr const char* kOp = "CausalConv3d";

// [cout, cin, taps] -> [cout, taps, cin] float32 on the host: per output channel the taps of one input
// frame form one contiguous block of GEMM depth, which is also cuDNN's NDHWC filter layout. Written
// straight into the result (a host float32 weight is read in place), one output channel per thread:
// the VAE loads spent most of their time in copies of the weights and in this loop on one thread.
Tensor pack_weight(const Tensor& weight, i64 cout, i64 cin, i64 kt, i64 k) {
  const Tensor w = weight.device() == Device::CPU && weight.dtype() == DType::F32 ? weight
                                                                                  : weight.to(Device::CPU).to(DType::F32);
  const i64 taps = kt * k * k;
  Tensor packed = Tensor::empty({cout, kt, k, k, cin}, DType::F32);
  const float* src = w.data_as<float>();
  float* dst = packed.data_as<float>();
#pragma omp parallel for schedule(static) if (cout * cin * taps >= (i64{1} << 16))
  for (i64 o = 0; o < cout; ++o) {
    const float* from = src + o * cin * taps;
    float* to = dst + o * taps * cin;
    // 16 input channels at a time: each tap's 16 values are one cache line of the output, and the 16
    // source rows (16 x taps floats) stay in L1 while the taps are walked.
    constexpr i64 kBlock = 16;
    for (i64 i0 = 0; i0 < cin; i0 += kBlock) {
      const i64 i1 = std::min(cin, i0 + kBlock);
      for (i64 t = 0; t < taps; ++t)
        for (i64 i = i0; i < i1; ++i) to[t * cin + i] = from[i * taps + t];
    }
  }
  return packed;
}

std::string kernel_str(int kt, int k) {
  return std::to_string(kt) + "x" + std::to_string(k) + "x" + std::to_string(k);
}

}  // namespace

namespace detail {

// A host weight for CUDA (fp32, bf16 or fp16) crosses the bus as stored, through the context's staging
// ring, and is packed by a kernel: the host packing's bits, without its float32 copy on the host and
// with half the bytes over the bus for a bf16 checkpoint. Others (an fp64 weight, a weight already on
// a GPU, the CPU) are packed on the host.
Tensor packed_conv_weight(const Tensor& weight, Device device) {
  const i64 cout = weight.dim(0), cin = weight.dim(1), kt = weight.ndim() == 5 ? weight.dim(2) : 1, k = weight.dim(-1);
#ifdef DATTN_WITH_CUDA
  const DType dt = weight.dtype();
  if (device == Device::CUDA && weight.device() == Device::CPU &&
      (dt == DType::F32 || dt == DType::BF16 || dt == DType::F16)) {
    const Tensor raw = upload_tensor(weight, dt);
    Tensor packed = Tensor::empty({cout, kt, k, k, cin}, DType::F32, Device::CUDA);
    cuda::pack_conv_weight(raw.data(), dt, packed.data_as<float>(), cout, cin, kt * k * k);
    return packed;
  }
#endif
  return pack_weight(weight, cout, cin, kt, k).to(device);
}

// The last `keep` frames of the stream [tail; x] (tail may be undefined), copied into a new tensor.
Tensor conv_stream_tail(const Tensor& tail, const Tensor& x, i64 keep) {
  const i64 n_tail = tail.defined() ? tail.dim(0) : 0, frames = x.dim(0);
  Tensor next = Tensor::empty({keep, x.dim(1), x.dim(2), x.dim(3)}, x.dtype(), x.device());
  const i64 from_x = std::min(keep, frames), from_tail = keep - from_x;
  if (from_tail) next.narrow0(0, from_tail).copy_from(tail.narrow0(n_tail - from_tail, from_tail));
  if (from_x) next.narrow0(from_tail, from_x).copy_from(x.narrow0(frames - from_x, from_x));
  return next;
}

}  // namespace detail

CausalConv3d::CausalConv3d(const Tensor& weight, const Tensor& bias, Device device, ConvMath math, CausalPad pad,
                           DType dtype)
    : pad_(pad), math_(math), device_(device), dtype_(dtype), compute_dtype_(dtype) {
  detail::require_float(kOp, "weight", weight);
  if (dtype != DType::F32 && dtype != DType::BF16)
    throw UserError(std::string(kOp) + ": activation dtype " + std::string(dtype_name(dtype)) +
                    ": expected fp32 or bf16");
  if (dtype == DType::BF16 && device != Device::CUDA)
    throw UserError(std::string(kOp) + ": bf16 activations run on CUDA only (the " + std::string(device_name(device)) +
                    " convolution computes in fp32): use fp32 there");
  if (weight.ndim() != 5 && weight.ndim() != 4)
    throw UserError(std::string(kOp) + ": weight " + weight.describe() +
                    ": expected [cout, cin, kt, k, k] (Conv3d) or [cout, cin, k, k] (Conv2d)");
  const i64 kt = weight.ndim() == 5 ? weight.dim(2) : 1, k = weight.dim(-1);
  if (weight.dim(0) <= 0 || weight.dim(1) <= 0 || kt <= 0 || k <= 0 || k % 2 == 0 || weight.dim(-2) != k)
    throw UserError(std::string(kOp) + ": weight " + weight.describe() +
                    ": expected a square spatial kernel of odd size and positive channel counts");
  cout_ = static_cast<int>(weight.dim(0)), cin_ = static_cast<int>(weight.dim(1));
  kt_ = static_cast<int>(kt), k_ = static_cast<int>(k);
  if (kt == 1 && k == 1) pad_ = CausalPad::Zeros;  // nothing to pad: the plain path, no copies
  if (bias.defined()) {
    detail::require_float(kOp, "bias", bias);
    detail::require_shape(kOp, "bias", bias, {cout_});
  }
  // cuDNN's bf16 NDHWC kernels want both channel counts in multiples of 8: others compute in float32.
  if (dtype == DType::BF16 && (cin_ % 8 != 0 || cout_ % 8 != 0)) compute_dtype_ = DType::F32;
  weight_ = detail::packed_conv_weight(weight, device);
  if (compute_dtype_ != DType::F32) weight_ = cast(weight_, compute_dtype_);  // rounded on the GPU
  bias_ = bias.defined() ? Tensor::from_f32(bias.to_f32_vector(), {cout_}).to(device)
                         : Tensor::zeros({cout_}, DType::F32, device);
}

Tensor CausalConv3d::forward(const Tensor& x, CausalConvCache* cache, const Tensor& norm_gain) const {
  const StageScope timed("causal_conv3d");
  if (x.ndim() != 4 || x.dim(3) != cin_ || x.device() != device_ || x.dtype() != dtype_)
    throw UserError(std::string(kOp) + " " + kernel_str(kt_, k_) + " " + std::to_string(cin_) + "->" +
                    std::to_string(cout_) + ": input " + x.describe() + ", expected [T, H, W, " + std::to_string(cin_) +
                    "] " + std::string(dtype_name(dtype_)) + " on " + std::string(device_name(device_)));
  if (norm_gain.defined()) {
    detail::require_f32(kOp, "norm_gain", norm_gain);
    detail::require_shape(kOp, "norm_gain", norm_gain, {cin_});
    detail::require_same_device(kOp, x, "norm_gain", norm_gain);
  }
  const i64 frames = x.dim(0), h = x.dim(1), w = x.dim(2), pad = kt_ - 1;
  if (pad > 0 && !cache) throw std::logic_error(std::string(kOp) + ": a causal convolution needs its frame cache");
  const Tensor tail = pad > 0 ? cache->tail : Tensor();
  const i64 n_tail = tail.defined() ? tail.dim(0) : 0;
  if (tail.defined() && (tail.ndim() != 4 || tail.dim(1) != h || tail.dim(2) != w || tail.dim(3) != cin_ ||
                         n_tail > pad || tail.device() != device_ || tail.dtype() != compute_dtype_))
    throw std::logic_error(std::string(kOp) + ": cached " + tail.describe() + " does not continue " + x.describe());
  if (pad_ == CausalPad::Replicate)
    return forward_replicate(
        norm_gain.defined() ? normalize_channels(x, norm_gain, /*silu=*/true, compute_dtype_) : cast(x, compute_dtype_),
        cache);
  const i64 keep = std::min(pad, n_tail + frames);
  Tensor out;

  if (device_ == Device::CPU) {
    const Tensor src = norm_gain.defined() ? cpu::normalize_channels(x, norm_gain, /*silu=*/true) : x;
    // The stream as frame pointers: null for the causal zeros, then the cached frames, then the chunk.
    const i64 frame = h * w * cin_;
    std::vector<const float*> in(static_cast<std::size_t>(pad + frames), nullptr);
    for (i64 i = 0; i < n_tail; ++i) in[pad - n_tail + i] = tail.data_as<float>() + i * frame;
    for (i64 t = 0; t < frames; ++t) in[pad + t] = src.data_as<float>() + t * frame;
    out = Tensor::empty({frames, h, w, cout_}, DType::F32);
    std::vector<float*> outs(static_cast<std::size_t>(frames));
    for (i64 t = 0; t < frames; ++t) outs[t] = out.data_as<float>() + t * h * w * cout_;
    cpu::Conv3dGeometry g;
    g.cin = cin_, g.cout = cout_, g.kt = kt_, g.k = k_, g.h = static_cast<int>(h), g.w = static_cast<int>(w);
    cpu::conv3d_frames(g, weight_.data_as<float>(), bias_.data_as<float>(), in.data(), static_cast<int>(in.size()),
                       outs.data());
    if (pad > 0) cache->tail = detail::conv_stream_tail(tail, src, keep);
    return out;
  }
#ifdef DATTN_WITH_CUDA
  // The stream in one buffer of the compute dtype: zero frames where the cache is shorter than the
  // padding, the cached frames, then the chunk (or its norm, written there directly). The zeros (all-zero
  // bits in fp32 and bf16) contribute exactly nothing.
  const DType cd = compute_dtype_;
  const Tensor xs = norm_gain.defined() ? x : cast(x, cd);  // a float32 conv of bf16 input without a norm
  const std::size_t frame_bytes = static_cast<std::size_t>(h * w * cin_) * dtype_size(cd);
  Tensor stream;
  const bool aligned = reinterpret_cast<std::uintptr_t>(xs.data()) % 256 == 0;  // cuDNN's fast kernels want it
  if (pad == 0 && !norm_gain.defined() && aligned) {
    stream = xs;
  } else {
    stream = Tensor::empty({pad + frames, h, w, cin_}, cd, Device::CUDA);
    char* base = static_cast<char*>(stream.data());
    cuda::fill_async(base, 0, static_cast<std::size_t>(pad - n_tail) * frame_bytes);
    if (n_tail) cuda::copy_async(base + (pad - n_tail) * frame_bytes, tail.data(), n_tail * frame_bytes);
    char* chunk = base + pad * frame_bytes;
    if (norm_gain.defined())
      cuda::normalize_channels(x.data(), x.dtype(), chunk, cd, norm_gain.data_as<float>(), frames * h * w, cin_, true);
    else
      cuda::copy_async(chunk, xs.data(), frames * frame_bytes);
  }
  out = Tensor::empty({frames, h, w, cout_}, cd, Device::CUDA);
  cuda::ConvGeometry g;
  g.frames_in = static_cast<int>(pad + frames), g.h = static_cast<int>(h), g.w = static_cast<int>(w);
  g.cin = cin_, g.cout = cout_, g.kt = kt_, g.k = k_, g.tf32 = math_ == ConvMath::TF32, g.bf16 = cd == DType::BF16;
  cuda::conv3d(g, stream.data(), weight_.data(), bias_.data_as<float>(), out.data());
  if (pad > 0) {
    Tensor next = Tensor::empty({keep, h, w, cin_}, cd, Device::CUDA);
    cuda::copy_async(next.data(), static_cast<const char*>(stream.data()) + (pad + frames - keep) * frame_bytes,
                     keep * frame_bytes);
    cache->tail = next;
  }
  return out;
#else
  detail::no_kernel(kOp, device_);
#endif
}

}  // namespace dattn::ops
