// CausalConv3d, Conv2d and RmsNorm of the Wan VAE decoder.
#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "models/wan_vae/frame_ops.h"
#include "models/wan_vae/layers.h"
#include "ops/cpu/conv3d.h"

namespace dattn::wan_vae {
namespace {

std::vector<float> take_vector(WeightStore& store, const std::string& name, const Shape& shape) {
  return store.take(name, DType::F32, Device::CPU, shape).to_f32_vector();
}

ops::Conv3dGeometry geometry(int cin, int cout, int kt, int k, std::int64_t h, std::int64_t w) {
  ops::Conv3dGeometry g;
  g.cin = cin, g.cout = cout, g.kt = kt, g.kh = g.kw = k;
  g.h = static_cast<int>(h), g.w = static_cast<int>(w);
  g.pad_h = g.pad_w = (k - 1) / 2;
  return g;
}

void check_channels(const char* layer, const Tensor& x, int cin) {
  if (x.ndim() != 4 || x.dim(1) != cin)
    throw std::logic_error(std::string("wan_vae ") + layer + ": input " + x.describe() + ", expected " +
                           std::to_string(cin) + " channels");
}

}  // namespace

CausalConv3d::CausalConv3d(WeightStore& store, const std::string& name, int cin, int cout, int kt, int k,
                           SlotCounter& slots)
    : cin_(cin), cout_(cout), kt_(kt), k_(k) {
  weight_ = store.take(name + ".weight", DType::F32, Device::CPU, {cout, cin, kt, k, k});
  if (kt > 1) {
    Tensor packed = Tensor::empty(weight_.shape(), DType::F32);
    ops::conv3d_pack_weight(weight_.data_as<float>(), geometry(cin, cout, kt, k, k, k), packed.data_as<float>());
    weight_ = packed;
  }
  bias_ = take_vector(store, name + ".bias", {cout});
  if (kt > 1) slot_ = slots.take();
}

Tensor CausalConv3d::forward(const Tensor& x, FrameCache& cache) const {
  check_channels("CausalConv3d", x, cin_);
  const std::int64_t frames = x.dim(0), h = x.dim(2), w = x.dim(3);
  const int pad = kt_ - 1;
  // The stream this chunk continues: pad frames (cached ones, zeros where the stream is shorter), then x.
  std::vector<const float*> in(pad + frames, nullptr);
  if (slot_ >= 0 && cache.tail[slot_].defined()) {
    const Tensor& tail = cache.tail[slot_];
    if (tail.dim(1) != cin_ || tail.dim(2) != h || tail.dim(3) != w)
      throw std::logic_error("wan_vae CausalConv3d: cached " + tail.describe() + " does not match " + x.describe());
    for (std::int64_t i = 0; i < tail.dim(0); ++i) in[pad - tail.dim(0) + i] = frame_ptr(tail, i);
  }
  for (std::int64_t t = 0; t < frames; ++t) in[pad + t] = frame_ptr(x, t);

  Tensor out = new_frames(frames, cout_, h, w);
  std::vector<float*> outs(frames);
  for (std::int64_t t = 0; t < frames; ++t) outs[t] = frame_ptr(out, t);
  ops::conv3d_frames(geometry(cin_, cout_, kt_, k_, h, w), weight_.data_as<float>(), bias_.data(), in.data(),
                     static_cast<int>(in.size()), outs.data());

  if (slot_ >= 0) {
    // Keep the last `pad` frames of the stream (fewer while the stream is shorter).
    std::vector<const float*> keep;
    for (std::size_t i = in.size() - pad; i < in.size(); ++i)
      if (in[i]) keep.push_back(in[i]);
    Tensor tail = new_frames(static_cast<std::int64_t>(keep.size()), cin_, h, w);
    const std::size_t frame_bytes = static_cast<std::size_t>(cin_ * h * w) * sizeof(float);
    for (std::size_t i = 0; i < keep.size(); ++i)
      std::memcpy(frame_ptr(tail, static_cast<std::int64_t>(i)), keep[i], frame_bytes);
    cache.tail[slot_] = tail;
  }
  return out;
}

Conv2d::Conv2d(WeightStore& store, const std::string& name, int cin, int cout, int k) : cin_(cin), cout_(cout), k_(k) {
  weight_ = store.take(name + ".weight", DType::F32, Device::CPU, {cout, cin, k, k});
  bias_ = take_vector(store, name + ".bias", {cout});
}

void Conv2d::forward(const float* in, float* out, int h, int w) const {
  ops::conv3d_frames(geometry(cin_, cout_, 1, k_, h, w), weight_.data_as<float>(), bias_.data(), &in, 1, &out);
}

RmsNorm::RmsNorm(WeightStore& store, const std::string& name, int dim, bool images) {
  // Shapes as diffusers stores gamma: [dim, 1, 1] for per-frame (image) use, [dim, 1, 1, 1] for video.
  const Shape shape = images ? Shape{dim, 1, 1} : Shape{dim, 1, 1, 1};
  gamma_ = take_vector(store, name + ".gamma", shape);
}

Tensor RmsNorm::forward(const Tensor& x, bool silu) const {
  check_channels("RmsNorm", x, static_cast<int>(gamma_.size()));
  return rms_norm(x, gamma_.data(), silu);
}

}  // namespace dattn::wan_vae
