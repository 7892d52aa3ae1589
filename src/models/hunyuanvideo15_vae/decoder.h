#pragma once
// HunyuanVideo15Decoder3D: the network that turns one latent frame (with the caches of the frames before
// it) into its video frames. One class for the CPU and CUDA: the device is where its weights were placed.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dattn/models/hunyuanvideo15_vae.h"
#include "models/hunyuanvideo15_vae/layers.h"

namespace dattn::hunyuanvideo15_vae {

// What a decode carries from one latent frame to the next.
struct DecodeState {
  FrameCache frames;         // the causal convolutions' tails and the up-samplers' first-frame marks
  KeyValueCache attention;  // the mid-block attention's keys and values of the frames so far
};

class Decoder {
 public:
  // Takes decoder.* from `store`, placing them on `device`; activations of `dtype`.
  Decoder(WeightStore& store, const HunyuanVideo15VaeConfig& config, Device device, ops::ConvMath math, DType dtype);

  // The state of a decode of `latent_frames` latent frames of h x w.
  DecodeState new_state(std::int64_t latent_frames, std::int64_t h, std::int64_t w) const;

  // Receives an intermediate (diffusers' module path, e.g. "decoder.mid_block.out") for the frames of
  // this call, channels-last, in time order over the calls.
  using Observer = std::function<void(const std::string& name, const Tensor& frames)>;

  // One latent frame [1, H, W, latent_channels] (the next of the video) of the decoder's dtype on its device; `emit`
  // receives its decoded frames [n, 16 H, 16 W, out_channels] in time order.
  //
  // Depth first: a latent frame goes through the middle, then every frame an up block produces goes on
  // through the next stages on its own before the next one. Every causal convolution still sees its
  // input frames in time order, so the result is the whole-video decode's, while the activations alive
  // at once are single frames.
  void forward(const Tensor& z, DecodeState& state, const std::function<void(const Tensor&)>& emit,
               const Observer& observe = {}) const;

  void set_attention_score_bytes(std::int64_t bytes) {
    score_bytes_ = bytes > 0 ? bytes : AttentionBlock::kScoreBytes;
  }

 private:
  Decoder(LayerInit init, const HunyuanVideo15VaeConfig& config);
  void run_stage(std::size_t stage, const Tensor& x, DecodeState& state, const std::function<void(const Tensor&)>& emit,
                 const Observer& observe) const;

  int slots_ = 0;
  std::int64_t score_bytes_ = AttentionBlock::kScoreBytes;
  SlotCounter counter_;  // only used while building; constructed before any layer takes a slot
  Conv conv_in_;
  ResidualBlock mid_res0_;
  AttentionBlock mid_attn_;
  ResidualBlock mid_res1_;
  std::vector<UpBlock> up_blocks_;
  RmsNorm norm_out_;
  Conv conv_out_;
};

}  // namespace dattn::hunyuanvideo15_vae
