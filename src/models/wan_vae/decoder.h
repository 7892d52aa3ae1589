#pragma once
// WanDecoder3d plus the post_quant_conv in front of it: the network that turns one latent frame (with
// the frame cache of the frames before it) into its video frames, before unpatchify.
#include <vector>

#include "dattn/models/wan_vae.h"
#include "models/wan_vae/layers.h"

namespace dattn::wan_vae {

class Decoder {
 public:
  // Takes decoder.* and post_quant_conv.* from `store`.
  Decoder(WeightStore& store, const WanVaeConfig& config);

  FrameCache new_cache() const { return FrameCache(slots_); }
  // One chunk of latent frames [T, z_dim, H, W] -> [T', out_channels, H * 2^stages, W * 2^stages].
  // `first_chunk` is true for the chunk holding the video's first latent frame.
  Tensor forward(const Tensor& z, FrameCache& cache, bool first_chunk) const;

 private:
  int slots_ = 0;
  SlotCounter counter_;  // only used while building
  CausalConv3d post_quant_conv_;
  CausalConv3d conv_in_;
  ResidualBlock mid_res0_;
  AttentionBlock mid_attn_;
  ResidualBlock mid_res1_;
  std::vector<UpBlock> up_blocks_;
  RmsNorm norm_out_;
  CausalConv3d conv_out_;
};

}  // namespace dattn::wan_vae
