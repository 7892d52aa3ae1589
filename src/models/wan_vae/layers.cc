// The resample and up blocks of the Wan VAE decoder (see layers.h).
#include "models/wan_vae/layers.h"

#include <cmath>
#include <stdexcept>

#include "dattn/ops/elementwise.h"
#include "dattn/ops/frames.h"
#include "dattn/ops/norm.h"

namespace dattn::wan_vae {

Resample::Resample(LayerInit& init, const std::string& name, int dim, int out_dim, bool temporal)
    : temporal_(temporal), conv_(init, name + ".resample.1", dim, out_dim, 1, 3, /*conv2d=*/true) {
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
