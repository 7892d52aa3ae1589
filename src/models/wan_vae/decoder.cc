#include "models/wan_vae/decoder.h"

namespace dattn::wan_vae {

std::vector<int> decoder_dims(const WanVaeConfig& c) {
  std::vector<int> dims = {c.decoder_base_dim * c.dim_mult.back()};
  for (auto it = c.dim_mult.rbegin(); it != c.dim_mult.rend(); ++it) dims.push_back(c.decoder_base_dim * *it);
  return dims;
}

// counter_ is constructed (first of the members) before any layer takes a slot from it.
Decoder::Decoder(WeightStore& store, const WanVaeConfig& c, Device device, ops::ConvMath math, DType dtype)
    : Decoder(LayerInit{store, device, math, counter_, ops::CausalPad::Zeros, "", dtype}, c) {}

Decoder::Decoder(LayerInit init, const WanVaeConfig& c)
    : post_quant_conv_(init, "post_quant_conv", c.z_dim, c.z_dim, 1, 1),
      conv_in_(init, "decoder.conv_in", c.z_dim, decoder_dims(c)[0], 3, 3),
      mid_res0_(init, "decoder.mid_block.resnets.0", decoder_dims(c)[0], decoder_dims(c)[0]),
      mid_attn_(init, "decoder.mid_block.attentions.0", decoder_dims(c)[0]),
      mid_res1_(init, "decoder.mid_block.resnets.1", decoder_dims(c)[0], decoder_dims(c)[0]),
      norm_out_(init, "decoder.norm_out", decoder_dims(c).back(), false),
      conv_out_(init, "decoder.conv_out", decoder_dims(c).back(), c.out_channels, 3, 3) {
  const std::vector<int> dims = decoder_dims(c);
  const std::vector<bool> temporal = c.temporal_upsample();
  const int stages = static_cast<int>(c.dim_mult.size());
  for (int i = 0; i < stages; ++i) {
    const bool up = i != stages - 1;
    // Wan2.1 blocks after the first take the half width their predecessor's upsampler produced.
    const int in_dim = (i > 0 && !c.is_residual) ? dims[i] / 2 : dims[i];
    up_blocks_.emplace_back(init, "decoder.up_blocks." + std::to_string(i), in_dim, dims[i + 1], c.num_res_blocks,
                            c.is_residual, up, up && temporal[i]);
  }
  slots_ = counter_.next;
}

void Decoder::forward(const Tensor& z, FrameCache& cache, bool first_chunk,
                      const std::function<void(const Tensor&)>& emit) const {
  Tensor x = conv_in_.forward(post_quant_conv_.forward(z, cache), cache);
  x = mid_res0_.forward(x, cache);
  x = mid_attn_.forward(x, score_bytes_);
  x = mid_res1_.forward(x, cache);
  run_stage(0, x, cache, first_chunk, emit);
}

void Decoder::run_stage(std::size_t stage, const Tensor& x, FrameCache& cache, bool first_chunk,
                        const std::function<void(const Tensor&)>& emit) const {
  if (stage == up_blocks_.size()) {
    emit(conv_out_.forward_unrounded(x, cache, norm_out_.gain()));  // conv_out(SiLU(norm_out(x)))
    return;
  }
  const Tensor h = up_blocks_[stage].forward(x, cache, first_chunk);
  for (std::int64_t f = 0; f < h.dim(0); ++f) run_stage(stage + 1, h.narrow0(f, 1), cache, first_chunk, emit);
}

}  // namespace dattn::wan_vae
