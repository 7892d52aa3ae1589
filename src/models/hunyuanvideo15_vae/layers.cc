// The HunyuanVideo-1.5 VAE decoder's up-sampler and up blocks (see layers.h).
#include "models/hunyuanvideo15_vae/layers.h"

#include "dattn/ops/frames.h"

namespace dattn::hunyuanvideo15_vae {

Upsampler::Upsampler(LayerInit& init, const std::string& name, int in_dim, int out_dim, bool temporal)
    : factor_t_(temporal ? 2 : 1),
      conv_(init, name + ".conv" + init.causal_conv_suffix, in_dim, out_dim * 4 * (temporal ? 2 : 1), 3, 3) {
  slot_ = init.slots.take();
}

Tensor Upsampler::forward(const Tensor& x, FrameCache& cache) const {
  const bool first = factor_t_ == 2 && !cache.started[slot_];
  cache.started[slot_] = true;
  return ops::dcae_upsample(conv_.forward(x, cache), x, factor_t_, first);
}

UpBlock::UpBlock(LayerInit& init, const std::string& name, int in_dim, int out_dim, int num_resnets, int up_dim,
                 bool up, bool temporal) {
  int dim = in_dim;
  for (int i = 0; i < num_resnets; ++i) {
    resnets_.emplace_back(init, name + ".resnets." + std::to_string(i), dim, out_dim);
    dim = out_dim;
  }
  if (up) upsampler_.emplace_back(init, name + ".upsamplers.0", out_dim, up_dim, temporal);
}

Tensor UpBlock::forward(const Tensor& x, FrameCache& cache) const {
  Tensor h = x;
  for (const auto& r : resnets_) h = r.forward(h, cache);
  if (!upsampler_.empty()) h = upsampler_[0].forward(h, cache);
  return h;
}

}  // namespace dattn::hunyuanvideo15_vae
