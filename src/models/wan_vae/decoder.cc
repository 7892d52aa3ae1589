#include "models/wan_vae/decoder.h"

namespace dattn::wan_vae {
namespace {

// Decoder widths: dims[0] for conv_in and the middle, then dims[i] -> dims[i + 1] for up block i.
std::vector<int> decoder_dims(const WanVaeConfig& c) {
  std::vector<int> dims = {c.decoder_base_dim * c.dim_mult.back()};
  for (auto it = c.dim_mult.rbegin(); it != c.dim_mult.rend(); ++it) dims.push_back(c.decoder_base_dim * *it);
  return dims;
}

}  // namespace

Decoder::Decoder(WeightStore& store, const WanVaeConfig& c)
    : post_quant_conv_(store, "post_quant_conv", c.z_dim, c.z_dim, 1, 1, counter_),
      conv_in_(store, "decoder.conv_in", c.z_dim, decoder_dims(c)[0], 3, 3, counter_),
      mid_res0_(store, "decoder.mid_block.resnets.0", decoder_dims(c)[0], decoder_dims(c)[0], counter_),
      mid_attn_(store, "decoder.mid_block.attentions.0", decoder_dims(c)[0]),
      mid_res1_(store, "decoder.mid_block.resnets.1", decoder_dims(c)[0], decoder_dims(c)[0], counter_),
      norm_out_(store, "decoder.norm_out", decoder_dims(c).back(), false),
      conv_out_(store, "decoder.conv_out", decoder_dims(c).back(), c.out_channels, 3, 3, counter_) {
  const std::vector<int> dims = decoder_dims(c);
  const std::vector<bool> temporal = c.temporal_upsample();
  const int stages = static_cast<int>(c.dim_mult.size());
  for (int i = 0; i < stages; ++i) {
    const bool up = i != stages - 1;
    // Wan2.1 blocks after the first take the half width their predecessor's upsampler produced.
    const int in_dim = (i > 0 && !c.is_residual) ? dims[i] / 2 : dims[i];
    up_blocks_.emplace_back(store, "decoder.up_blocks." + std::to_string(i), in_dim, dims[i + 1], c.num_res_blocks,
                            c.is_residual, up, up && temporal[i], counter_);
  }
  slots_ = counter_.next;
}

Tensor Decoder::forward(const Tensor& z, FrameCache& cache, bool first_chunk) const {
  Tensor x = conv_in_.forward(post_quant_conv_.forward(z, cache), cache);
  x = mid_res0_.forward(x, cache);
  x = mid_attn_.forward(x);
  x = mid_res1_.forward(x, cache);
  for (const auto& block : up_blocks_) x = block.forward(x, cache, first_chunk);
  return conv_out_.forward(norm_out_.forward(x, /*silu=*/true), cache);
}

}  // namespace dattn::wan_vae
