// Conv, RmsNorm and the residual, resample and up blocks of the Wan VAE decoder (see layers.h).
#include "models/wan_vae/layers.h"

#include <cmath>
#include <stdexcept>

#include "dattn/ops/elementwise.h"
#include "dattn/ops/frames.h"
#include "dattn/ops/norm.h"

namespace dattn::wan_vae {

Conv::Conv(LayerInit& init, const std::string& name, int cin, int cout, int kt, int k, bool conv2d) {
  const Shape shape = conv2d ? Shape{cout, cin, k, k} : Shape{cout, cin, kt, k, k};
  const Tensor weight = init.store.take(name + ".weight", DType::F32, Device::CPU, shape);
  const Tensor bias = init.store.take(name + ".bias", DType::F32, Device::CPU, {cout});
  op_ = ops::CausalConv3d(weight, bias, init.device, init.math);
  if (kt > 1) slot_ = init.slots.take();
}

Tensor Conv::forward(const Tensor& x, FrameCache& cache, const Tensor& norm_gain) const {
  return op_.forward(x, slot_ >= 0 ? &cache.convs[slot_] : nullptr, norm_gain);
}

RmsNorm::RmsNorm(LayerInit& init, const std::string& name, int dim, bool images) {
  // Shapes as diffusers stores gamma: [dim, 1, 1] for per-frame (image) use, [dim, 1, 1, 1] for video.
  const Shape shape = images ? Shape{dim, 1, 1} : Shape{dim, 1, 1, 1};
  std::vector<float> gain = init.store.take(name + ".gamma", DType::F32, Device::CPU, shape).to_f32_vector();
  const float scale = std::sqrt(static_cast<float>(dim));
  for (float& g : gain) g *= scale;
  gain_ = Tensor::from_f32(gain, {dim}).to(init.device);
}

Tensor RmsNorm::forward(const Tensor& x, bool silu) const { return ops::normalize_channels(x, gain_, silu); }

ResidualBlock::ResidualBlock(LayerInit& init, const std::string& name, int in_dim, int out_dim)
    : norm1_(init, name + ".norm1", in_dim, false),
      norm2_(init, name + ".norm2", out_dim, false),
      conv1_(init, name + ".conv1", in_dim, out_dim, 3, 3),
      conv2_(init, name + ".conv2", out_dim, out_dim, 3, 3) {
  if (in_dim != out_dim) shortcut_.emplace_back(init, name + ".conv_shortcut", in_dim, out_dim, 1, 1);
}

Tensor ResidualBlock::forward(const Tensor& x, FrameCache& cache) const {
  const Tensor h = shortcut_.empty() ? x : shortcut_[0].forward(x, cache);
  Tensor y = conv1_.forward(x, cache, norm1_.gain());  // conv1(SiLU(norm1(x)))
  y = conv2_.forward(y, cache, norm2_.gain());         // dropout is the identity at inference
  return ops::add(y, h);
}

Resample::Resample(LayerInit& init, const std::string& name, int dim, int out_dim, bool temporal)
    : dim_(dim), temporal_(temporal), conv_(init, name + ".resample.1", dim, out_dim, 1, 3, /*conv2d=*/true) {
  if (temporal) {
    time_conv_.emplace_back(init, name + ".time_conv", dim, 2 * dim, 3, 1);
    slot_ = init.slots.take();
  }
}

Tensor Resample::forward(const Tensor& x, FrameCache& cache) const {
  if (!temporal_) return conv_.forward(ops::upsample_nearest2x(x), cache);
  if (!cache.started[slot_]) {
    // The first chunk is not doubled in time (one latent frame decodes to one video frame), and the time
    // conv's stream starts with the next chunk.
    cache.started[slot_] = true;
    return conv_.forward(ops::upsample_nearest2x(x), cache);
  }
  // The time conv's [T, H, W, 2 * dim] holds frame 2t in channels [0, dim) and frame 2t + 1 in [dim, 2 dim):
  // the upsampling splits them into 2T frames on the way.
  return conv_.forward(ops::upsample_nearest2x(time_conv_[0].forward(x, cache), /*parts=*/2), cache);
}

UpBlock::UpBlock(LayerInit& init, const std::string& name, int in_dim, int out_dim, int num_res_blocks,
                 bool residual, bool up, bool temporal) {
  int dim = in_dim;
  for (int i = 0; i <= num_res_blocks; ++i) {
    resnets_.emplace_back(init, name + ".resnets." + std::to_string(i), dim, out_dim);
    dim = out_dim;
  }
  if (!up) return;
  // Wan2.2's residual blocks keep the width through the upsampler; Wan2.1's halve it there.
  if (residual)
    upsampler_.emplace_back(init, name + ".upsampler", out_dim, out_dim, temporal);
  else
    upsampler_.emplace_back(init, name + ".upsamplers.0", out_dim, out_dim / 2, temporal);
  dup_shortcut_ = residual;
  factor_t_ = temporal ? 2 : 1;
}

Tensor UpBlock::forward(const Tensor& x, FrameCache& cache, bool first_chunk) const {
  Tensor h = x;
  for (const auto& r : resnets_) h = r.forward(h, cache);
  if (!upsampler_.empty()) h = upsampler_[0].forward(h, cache);
  if (dup_shortcut_) ops::add_dup_up(h, x, factor_t_, 2, first_chunk ? factor_t_ - 1 : 0);
  return h;
}

}  // namespace dattn::wan_vae
