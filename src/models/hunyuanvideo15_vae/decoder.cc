// HunyuanVideo15Decoder3D built from the checkpoint, and its streamed depth-first forward (see decoder.h).
#include "models/hunyuanvideo15_vae/decoder.h"

#include "dattn/ops/frames.h"

namespace dattn::hunyuanvideo15_vae {
namespace {

LayerInit family_init(WeightStore& store, Device device, ops::ConvMath math, SlotCounter& slots, DType dtype) {
  // HunyuanVideo15CausalConv3d pads by replication and holds its nn.Conv3d as `.conv`.
  return LayerInit{store, device, math, slots, ops::CausalPad::Replicate, ".conv", dtype};
}

}  // namespace

Decoder::Decoder(WeightStore& store, const HunyuanVideo15VaeConfig& c, Device device, ops::ConvMath math, DType dtype)
    : Decoder(family_init(store, device, math, counter_, dtype), c) {}

Decoder::Decoder(LayerInit init, const HunyuanVideo15VaeConfig& c)
    : conv_in_(init, "decoder.conv_in.conv", c.latent_channels, c.decoder_channels()[0], 3, 3),
      mid_res0_(init, "decoder.mid_block.resnets.0", c.decoder_channels()[0], c.decoder_channels()[0]),
      mid_attn_(init, "decoder.mid_block.attentions.0", c.decoder_channels()[0]),
      mid_res1_(init, "decoder.mid_block.resnets.1", c.decoder_channels()[0], c.decoder_channels()[0]),
      norm_out_(init, "decoder.norm_out", c.decoder_channels().back(), /*images=*/false),
      conv_out_(init, "decoder.conv_out.conv", c.decoder_channels().back(), c.out_channels, 3, 3) {
  const std::vector<int> dec = c.decoder_channels();
  int in = dec[0];
  for (int i = 0; i < static_cast<int>(dec.size()); ++i) {
    // Config validation keeps the temporal factor within the spatial one: a block up-samples in time only
    // where it also does in space.
    const bool up = c.spatial_upsample(i);
    const int up_dim = c.upsample_match_channel && up ? dec[i + 1] : dec[i];
    up_blocks_.emplace_back(init, "decoder.up_blocks." + std::to_string(i), in, dec[i], c.layers_per_block + 1, up_dim,
                            up, c.temporal_upsample(i));
    in = up ? up_dim : dec[i];
  }
  slots_ = counter_.next;
}

DecodeState Decoder::new_state(std::int64_t latent_frames, std::int64_t h, std::int64_t w) const {
  return DecodeState{FrameCache(slots_), mid_attn_.new_cache(latent_frames, h * w)};
}

void Decoder::forward(const Tensor& z, DecodeState& state, const std::function<void(const Tensor&)>& emit,
                      const Observer& observe) const {
  // conv_in plus the latents with each channel repeated to its width (diffusers' repeat_interleave).
  Tensor x = conv_in_.forward(z, state.frames);
  ops::add_dup_up(x, z, /*factor_t=*/1, /*factor_s=*/1, /*drop=*/0);
  if (observe) observe("decoder.mid_block.in", x);
  x = mid_res0_.forward(x, state.frames);
  if (observe) observe("decoder.mid_block.attentions.0.in", x);
  x = mid_attn_.forward(x, state.attention, score_bytes_);
  if (observe) observe("decoder.mid_block.attentions.0.out", x);
  x = mid_res1_.forward(x, state.frames);
  if (observe) observe("decoder.mid_block.out", x);
  run_stage(0, x, state, emit, observe);
}

void Decoder::run_stage(std::size_t stage, const Tensor& x, DecodeState& state,
                        const std::function<void(const Tensor&)>& emit, const Observer& observe) const {
  if (stage == up_blocks_.size()) {
    emit(conv_out_.forward_unrounded(x, state.frames, norm_out_.gain()));  // conv_out(SiLU(norm_out(x)))
    return;
  }
  const Tensor h = up_blocks_[stage].forward(x, state.frames);
  if (observe) observe("decoder.up_blocks." + std::to_string(stage) + ".out", h);
  for (std::int64_t f = 0; f < h.dim(0); ++f) run_stage(stage + 1, h.narrow0(f, 1), state, emit, observe);
}

}  // namespace dattn::hunyuanvideo15_vae
