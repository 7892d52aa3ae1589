#pragma once
// WanDecoder3d plus the post_quant_conv in front of it: the network that turns one latent frame (with
// the frame cache of the frames before it) into its video frames, before unpatchify. One class for the
// CPU and CUDA: the device is where its weights were placed.
#include <cstdint>
#include <functional>
#include <vector>

#include "dattn/models/wan_vae.h"
#include "models/wan_vae/layers.h"

namespace dattn::wan_vae {

// Decoder widths: dims[0] for conv_in and the middle, then dims[i] -> dims[i + 1] for up block i.
std::vector<int> decoder_dims(const WanVaeConfig& config);

class Decoder {
 public:
  // Takes decoder.* and post_quant_conv.* from `store`, placing them on `device`; activations of `dtype`.
  Decoder(WeightStore& store, const WanVaeConfig& config, Device device, ops::ConvMath math, DType dtype);

  FrameCache new_cache() const { return FrameCache(slots_); }

  // One latent frame [1, H, W, z_dim] of the decoder's dtype on its device; `emit` receives its decoded frames
  // [n, H', W', out_channels] in time order. `first_chunk`: the video's first latent frame.
  //
  // Depth first: a latent frame goes through the middle, then every frame an up block produces goes on
  // through the next stages on its own before the next one. Every causal convolution still sees its
  // input frames in time order, so the result is the chunked decode's, while the activations alive at
  // once are single frames (four times fewer at the output resolution than a whole chunk's).
  void forward(const Tensor& z, FrameCache& cache, bool first_chunk,
               const std::function<void(const Tensor&)>& emit) const;

  // For tests: the most bytes the mid-block attention's score block may take (0: the default).
  void set_attention_score_bytes(std::int64_t bytes) { score_bytes_ = bytes > 0 ? bytes : AttentionBlock::kScoreBytes; }

 private:
  Decoder(LayerInit init, const WanVaeConfig& config);
  void run_stage(std::size_t stage, const Tensor& x, FrameCache& cache, bool first_chunk,
                 const std::function<void(const Tensor&)>& emit) const;

  int slots_ = 0;
  std::int64_t score_bytes_ = AttentionBlock::kScoreBytes;
  SlotCounter counter_;  // only used while building
  Conv post_quant_conv_, conv_in_;
  ResidualBlock mid_res0_;
  AttentionBlock mid_attn_;
  ResidualBlock mid_res1_;
  std::vector<UpBlock> up_blocks_;
  RmsNorm norm_out_;
  Conv conv_out_;
};

}  // namespace dattn::wan_vae
