// The Wan VAE decoder on CUDA: post_quant_conv + WanDecoder3d over the latent frames, and the decode
// loop that writes the video. See cuda_decoder.h.
#ifdef DATTN_WITH_CUDA
#include <functional>
#include <stdexcept>

#include "dattn/core/device.h"
#include "dattn/core/device_memory.h"
#include "dattn/core/error.h"
#include "models/wan_vae/cuda/cuda_decoder.h"
#include "models/wan_vae/cuda/kernels.h"
#include "models/wan_vae/cuda/layers.h"

namespace dattn::wan_vae {
namespace {

std::vector<int> decoder_dims(const WanVaeConfig& c) {
  std::vector<int> dims = {c.decoder_base_dim * c.dim_mult.back()};
  for (auto it = c.dim_mult.rbegin(); it != c.dim_mult.rend(); ++it) dims.push_back(c.decoder_base_dim * *it);
  return dims;
}

}  // namespace

// The CPU Decoder's structure with gpu:: layers. Decoding is depth first: a latent frame goes through the
// middle, then every frame an up block produces goes on through the next stages on its own before the
// next one. Every causal convolution still sees its input frames in time order, so the result is the
// chunked decode's, while the activations alive at once are single frames (four times fewer at the
// output resolution than a whole latent frame's chunk).
class CudaDecoder {
 public:
  CudaDecoder(WeightStore& store, const WanVaeConfig& c, bool tf32)
      : post_quant_conv_(store, "post_quant_conv", c.z_dim, c.z_dim, 1, 1, false, tf32, &counter_),
        conv_in_(store, "decoder.conv_in", c.z_dim, decoder_dims(c)[0], 3, 3, false, tf32, &counter_),
        mid_res0_(store, "decoder.mid_block.resnets.0", decoder_dims(c)[0], decoder_dims(c)[0], tf32, counter_),
        mid_attn_(store, "decoder.mid_block.attentions.0", decoder_dims(c)[0]),
        mid_res1_(store, "decoder.mid_block.resnets.1", decoder_dims(c)[0], decoder_dims(c)[0], tf32, counter_),
        norm_out_(store, "decoder.norm_out", decoder_dims(c).back(), false),
        conv_out_(store, "decoder.conv_out", decoder_dims(c).back(), c.out_channels, 3, 3, false, tf32, &counter_) {
    const std::vector<int> dims = decoder_dims(c);
    const std::vector<bool> temporal = c.temporal_upsample();
    const int stages = static_cast<int>(c.dim_mult.size());
    for (int i = 0; i < stages; ++i) {
      const bool up = i != stages - 1;
      const int in_dim = (i > 0 && !c.is_residual) ? dims[i] / 2 : dims[i];
      up_blocks_.emplace_back(store, "decoder.up_blocks." + std::to_string(i), in_dim, dims[i + 1], c.num_res_blocks,
                              c.is_residual, up, up && temporal[i], tf32, counter_);
    }
    slots_ = counter_.next;
  }

  FrameCache new_cache() const { return FrameCache(slots_); }

  // One latent frame [1, H, W, z_dim]; `emit` receives the decoded frames [n, H', W', out_channels] in order.
  void forward(const Tensor& z, FrameCache& cache, bool first_chunk, const std::function<void(const Tensor&)>& emit) const {
    Tensor x = conv_in_.forward(post_quant_conv_.forward(z), cache);
    x = mid_res0_.forward(x, cache);
    x = mid_attn_.forward(x);
    x = mid_res1_.forward(x, cache);
    run_stage(0, x, cache, first_chunk, emit);
  }

 private:
  void run_stage(std::size_t stage, const Tensor& x, FrameCache& cache, bool first_chunk,
                 const std::function<void(const Tensor&)>& emit) const {
    if (stage == up_blocks_.size()) {
      emit(conv_out_.forward(x, cache, &norm_out_));  // conv_out(SiLU(norm_out(x)))
      return;
    }
    Tensor h = up_blocks_[stage].forward(x, cache, first_chunk);
    for (std::int64_t f = 0; f < h.dim(0); ++f) run_stage(stage + 1, h.narrow0(f, 1), cache, first_chunk, emit);
  }

  int slots_ = 0;
  SlotCounter counter_;  // only used while building
  gpu::Conv post_quant_conv_, conv_in_;
  gpu::ResidualBlock mid_res0_;
  gpu::AttentionBlock mid_attn_;
  gpu::ResidualBlock mid_res1_;
  std::vector<gpu::UpBlock> up_blocks_;
  gpu::RmsNorm norm_out_;
  gpu::Conv conv_out_;
};

std::shared_ptr<const CudaDecoder> load_cuda_decoder(WeightStore& store, const WanVaeConfig& config,
                                                     WanVaeConvMath math) {
  if (cuda_device_count() == 0)
    throw UserError("Wan VAE: device cuda: no CUDA device is visible (" + cuda_device_summary() + "); use --device cpu");
  return std::make_shared<const CudaDecoder>(store, config, math == WanVaeConvMath::TF32);
}

Tensor cuda_decode(const CudaDecoder& decoder, const WanVaeConfig& config, const Tensor& z) {
  const Shape video_shape = config.video_shape(z.shape());
  const std::int64_t batch = z.dim(0), zc = z.dim(1), t_lat = z.dim(2), h = z.dim(3), w = z.dim(4);
  // The latents are small: made channels-last on the host, one latent frame uploaded at a time.
  const Tensor zh = z.to(Device::CPU);
  const std::vector<float> zv = zh.to_f32_vector();
  Tensor video = gpu::new_tensor(video_shape);
  std::vector<float> frame(static_cast<std::size_t>(h * w * zc));
  for (std::int64_t b = 0; b < batch; ++b) {
    FrameCache cache = decoder.new_cache();
    std::int64_t t_out = 0;
    for (std::int64_t t = 0; t < t_lat; ++t) {
      for (std::int64_t c = 0; c < zc; ++c)
        for (std::int64_t p = 0; p < h * w; ++p) frame[p * zc + c] = zv[((b * zc + c) * t_lat + t) * h * w + p];
      const Tensor chunk = Tensor::from_f32(frame, {1, h, w, zc}).to(Device::CUDA);
      decoder.forward(chunk, cache, /*first_chunk=*/t == 0, [&](const Tensor& out) {
        if (t_out + out.dim(0) > video_shape[2] || out.dim(1) * config.patch_size != video_shape[3] ||
            out.dim(2) * config.patch_size != video_shape[4] || out.dim(3) != config.out_channels)
          throw std::logic_error("Wan VAE decode (cuda): chunk " + out.describe() + " does not fit " +
                                 shape_str(video_shape));
        gpu::unpatchify_clamp(out.data_as<float>(), video.data_as<float>(), out.dim(0), out.dim(1), out.dim(2),
                              config.patch_size, video_shape[1], video_shape[2], b, t_out);
        t_out += out.dim(0);
      });
    }
    if (t_out != video_shape[2])
      throw std::logic_error("Wan VAE decode (cuda): produced " + std::to_string(t_out) + " frames");
  }
  check_device("Wan VAE decode (cuda)");
  return video;
}

}  // namespace dattn::wan_vae
#endif  // DATTN_WITH_CUDA
