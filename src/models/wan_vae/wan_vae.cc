// WanVae: loading a diffusers AutoencoderKLWan directory and decoding latents frame by frame.
#include "dattn/models/wan_vae.h"

#include <algorithm>
#include <cstring>

#include "dattn/core/error.h"
#include "dattn/io/weight_store.h"
#include "dattn/core/device.h"
#include "dattn/core/device_memory.h"
#include "dattn/ops/combine.h"
#include "dattn/ops/frames.h"
#include "models/causal_vae/unused_tensors.h"
#include "models/wan_vae/decoder.h"

namespace dattn {

WanVae::WanVae() = default;
WanVae::~WanVae() = default;
WanVae::WanVae(WanVae&&) noexcept = default;
WanVae& WanVae::operator=(WanVae&&) noexcept = default;

WanVae WanVae::load(const std::string& dir, Device device, DType dtype, WanVaeConvMath conv_math) {
  causal_vae::require_vae_dtype("Wan VAE", device, dtype);
  if (device == Device::CUDA && cuda_device_count() == 0)
    throw UserError("Wan VAE: device cuda: no CUDA device is visible (" + cuda_device_summary() + "); use --device cpu");
  WanVae vae;
  vae.config_ = WanVaeConfig::from_json(read_component_config(dir), dir + "/config.json");
  vae.device_ = device;
  vae.dtype_ = dtype;
  WeightStore store(dir);
  vae.decoder_ = std::make_unique<wan_vae::Decoder>(
      store, vae.config_, device, conv_math == WanVaeConvMath::TF32 ? ops::ConvMath::TF32 : ops::ConvMath::FP32, dtype);
  causal_vae::require_only_ignored_unused(store, {"encoder.", "quant_conv."}, "Wan VAE decoder");
  return vae;
}

void WanVae::warm_up() const {
  (void)decode(Tensor::zeros({1, config_.z_dim, 2, 2, 2}, DType::F32, Device::CPU));
}

void WanVae::set_attention_score_bytes(std::int64_t bytes) { decoder_->set_attention_score_bytes(bytes); }

Tensor WanVae::decode(const Tensor& z, const FramesDone& frames_done) const {
  const Shape video_shape = config_.video_shape(z.shape());
  const std::int64_t batch = z.dim(0), zc = z.dim(1), t_lat = z.dim(2), h = z.dim(3), w = z.dim(4);
  // The latents are small: made channels-last on the host, one latent frame placed on the device at a time.
  const std::vector<float> zv = z.to_f32_vector();
  Tensor video = Tensor::empty(video_shape, DType::F32, device_);
  std::vector<float> frame(static_cast<std::size_t>(h * w * zc));
  for (std::int64_t b = 0; b < batch; ++b) {
    wan_vae::FrameCache cache = decoder_->new_cache();
    std::int64_t t_out = 0;
    for (std::int64_t t = 0; t < t_lat; ++t) {
      for (std::int64_t c = 0; c < zc; ++c)
        for (std::int64_t p = 0; p < h * w; ++p) frame[p * zc + c] = zv[((b * zc + c) * t_lat + t) * h * w + p];
      const Tensor chunk = ops::cast(Tensor::from_f32(frame, {1, h, w, zc}).to(device_), dtype_);
      decoder_->forward(chunk, cache, /*first_chunk=*/t == 0, [&](const Tensor& out) {
        if (t_out + out.dim(0) > video_shape[2])
          throw std::logic_error("Wan VAE decode: chunk " + out.describe() + " does not fit " + video.describe());
        ops::write_unpatchified_frames(out, config_.patch_size, video, b, t_out);
        t_out += out.dim(0);
      });
      if (frames_done) frames_done(video, b, t_out);  // per latent frame: few hand-overs, each a sync
    }
    if (t_out != video_shape[2]) throw std::logic_error("Wan VAE decode: produced " + std::to_string(t_out) + " frames");
  }
  if (device_ == Device::CUDA) check_device("Wan VAE decode (cuda)");
  return video;
}

}  // namespace dattn
