// HunyuanVideo15Vae: loading a diffusers AutoencoderKLHunyuanVideo15 directory and decoding latents frame
// by frame.
#include <stdexcept>
#include <string>
#include <vector>

#include "dattn/core/device.h"
#include "dattn/core/device_memory.h"
#include "dattn/core/error.h"
#include "dattn/io/weight_store.h"
#include "dattn/models/hunyuanvideo15_vae.h"
#include "dattn/ops/combine.h"
#include "dattn/ops/frames.h"
#include "models/causal_vae/unused_tensors.h"
#include "models/hunyuanvideo15_vae/decoder.h"

namespace dattn {

HunyuanVideo15Vae::HunyuanVideo15Vae() = default;
HunyuanVideo15Vae::~HunyuanVideo15Vae() = default;
HunyuanVideo15Vae::HunyuanVideo15Vae(HunyuanVideo15Vae&&) noexcept = default;
HunyuanVideo15Vae& HunyuanVideo15Vae::operator=(HunyuanVideo15Vae&&) noexcept = default;

HunyuanVideo15Vae HunyuanVideo15Vae::load(const std::string& dir, Device device, DType dtype,
                                          HunyuanVideo15VaeConvMath conv_math) {
  causal_vae::require_vae_dtype("HunyuanVideo-1.5 VAE", device, dtype);
  if (device == Device::CUDA && cuda_device_count() == 0)
    throw UserError("HunyuanVideo-1.5 VAE: device cuda: no CUDA device is visible (" + cuda_device_summary() +
                    "); use --device cpu");
  HunyuanVideo15Vae vae;
  vae.config_ = HunyuanVideo15VaeConfig::from_json(read_component_config(dir), dir + "/config.json");
  vae.device_ = device;
  vae.dtype_ = dtype;
  WeightStore store(dir);
  const ops::ConvMath math = conv_math == HunyuanVideo15VaeConvMath::TF32 ? ops::ConvMath::TF32 : ops::ConvMath::FP32;
  vae.decoder_ = std::make_unique<hunyuanvideo15_vae::Decoder>(store, vae.config_, device, math, dtype);
  causal_vae::require_only_ignored_unused(store, {"encoder."}, "HunyuanVideo-1.5 VAE decoder");
  return vae;
}

void HunyuanVideo15Vae::set_attention_score_bytes(std::int64_t bytes) { decoder_->set_attention_score_bytes(bytes); }

void HunyuanVideo15Vae::warm_up() const {
  (void)decode(Tensor::zeros({1, config_.latent_channels, 2, 2, 2}, DType::F32, Device::CPU));
}

Tensor HunyuanVideo15Vae::decode(const Tensor& z) const {
  const Shape video_shape = config_.video_shape(z.shape());
  const std::int64_t batch = z.dim(0), zc = z.dim(1), t_lat = z.dim(2), h = z.dim(3), w = z.dim(4);
  // The latents are small: made channels-last on the host, one latent frame placed on the device at a time.
  const std::vector<float> zv = z.to_f32_vector();
  Tensor video = Tensor::empty(video_shape, DType::F32, device_);
  std::vector<float> frame(static_cast<std::size_t>(h * w * zc));
  for (std::int64_t b = 0; b < batch; ++b) {
    hunyuanvideo15_vae::DecodeState state = decoder_->new_state(t_lat, h, w);
    std::int64_t t_out = 0;
    for (std::int64_t t = 0; t < t_lat; ++t) {
      for (std::int64_t c = 0; c < zc; ++c)
        for (std::int64_t p = 0; p < h * w; ++p) frame[p * zc + c] = zv[((b * zc + c) * t_lat + t) * h * w + p];
      const Tensor chunk = ops::cast(Tensor::from_f32(frame, {1, h, w, zc}).to(device_), dtype_);
      decoder_->forward(chunk, state, [&](const Tensor& out) {
        if (t_out + out.dim(0) > video_shape[2])
          throw std::logic_error("HunyuanVideo-1.5 VAE decode: chunk " + out.describe() + " does not fit " +
                                 video.describe());
        ops::write_unpatchified_frames(out, /*patch=*/1, video, b, t_out, /*clamp=*/false);
        t_out += out.dim(0);
      });
    }
    if (t_out != video_shape[2])
      throw std::logic_error("HunyuanVideo-1.5 VAE decode: produced " + std::to_string(t_out) + " frames");
  }
  if (device_ == Device::CUDA) check_device("HunyuanVideo-1.5 VAE decode (cuda)");
  return video;
}

}  // namespace dattn
