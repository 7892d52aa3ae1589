// WanVae: loading a diffusers AutoencoderKLWan directory and decoding latents frame by frame.
#include "dattn/models/wan_vae.h"

#include <algorithm>
#include <cstring>

#include "dattn/core/error.h"
#include "dattn/io/weight_store.h"
#include "models/wan_vae/cuda/cuda_decoder.h"
#include "models/wan_vae/decoder.h"
#include "models/wan_vae/frame_ops.h"
#include "ops/cpu/conv3d.h"

namespace dattn {
namespace {

// The decoder leaves the encoder's tensors unread; anything else left over means the checkpoint does not
// match the configuration, as WeightStore::require_all_used reports for whole models.
void require_decoder_tensors_used(const WeightStore& store) {
  std::vector<std::string> rest;
  for (const auto& name : store.unused())
    if (!name.starts_with("encoder.") && !name.starts_with("quant_conv.")) rest.push_back(name);
  if (rest.empty()) return;
  std::string list;
  for (std::size_t i = 0; i < rest.size() && i < 10; ++i) list += (i ? ", " : "") + rest[i];
  if (rest.size() > 10) list += ", ...";
  throw UserError(store.source() + ": " + std::to_string(rest.size()) +
                  " tensors the Wan VAE decoder does not use (a checkpoint for another config?): " + list);
}

// Writes one decoded chunk [n, C * p * p, h, w] into video[b, :, t0 : t0 + n] ([B, C, T, h * p, w * p]),
// undoing diffusers' patchify (whose first patch index runs along the width) and clamping to [-1, 1].
void write_frames(const Tensor& chunk, int patch, Tensor& video, std::int64_t b, std::int64_t t0) {
  const std::int64_t n = chunk.dim(0), h = chunk.dim(2), w = chunk.dim(3);
  const std::int64_t channels = video.dim(1), frames = video.dim(2), vh = video.dim(3), vw = video.dim(4);
  const float* src = chunk.data_as<float>();
  float* dst = video.data_as<float>();
#pragma omp parallel for collapse(2) schedule(static) if (chunk.numel() >= wan_vae::kParallelMinElements)
  for (std::int64_t c = 0; c < channels; ++c)
    for (std::int64_t f = 0; f < n; ++f)
      for (std::int64_t pa = 0; pa < patch; ++pa)
        for (std::int64_t pb = 0; pb < patch; ++pb) {
          const float* s = src + ((f * channels + c) * patch * patch + pa * patch + pb) * h * w;
          float* d = dst + (((b * channels + c) * frames + t0 + f) * vh + pb) * vw + pa;
          for (std::int64_t y = 0; y < h; ++y)
            for (std::int64_t x = 0; x < w; ++x)
              d[y * patch * vw + x * patch] = std::clamp(s[y * w + x], -1.0f, 1.0f);
        }
}

}  // namespace

WanVae::WanVae() = default;
WanVae::~WanVae() = default;
WanVae::WanVae(WanVae&&) noexcept = default;
WanVae& WanVae::operator=(WanVae&&) noexcept = default;

WanVae WanVae::load(const std::string& dir, Device device, DType dtype, WanVaeConvMath conv_math) {
  if (dtype != DType::F32)
    throw UserError("Wan VAE: dtype " + std::string(dtype_name(dtype)) + " is not supported; the decoder computes in " +
                    "fp32 on the CPU and on CUDA (use --dtype fp32 for the VAE)");
  WanVae vae;
  vae.config_ = WanVaeConfig::from_json(read_component_config(dir), dir + "/config.json");
  vae.device_ = device;
  WeightStore store(dir);
  if (device == Device::CUDA)
    vae.cuda_ = wan_vae::load_cuda_decoder(store, vae.config_, conv_math);
  else
    vae.decoder_ = std::make_unique<wan_vae::Decoder>(store, vae.config_);
  require_decoder_tensors_used(store);
  return vae;
}

Tensor WanVae::decode(const Tensor& z) const {
  const Shape video_shape = config_.video_shape(z.shape());
  if (device_ == Device::CUDA) return wan_vae::cuda_decode(*cuda_, config_, z.dtype() == DType::F32 ? z : z.to(DType::F32));
  const Tensor zf = z.to(Device::CPU).to(DType::F32);
  const std::int64_t batch = z.dim(0), zc = z.dim(1), t_lat = z.dim(2), h = z.dim(3), w = z.dim(4);
  Tensor video = Tensor::empty(video_shape, DType::F32);
  const ops::BlasSingleThread single_blas;  // the kernels parallelise with OpenMP (see conv3d.h)
  for (std::int64_t b = 0; b < batch; ++b) {
    wan_vae::FrameCache cache = decoder_->new_cache();
    std::int64_t t_out = 0;
    for (std::int64_t t = 0; t < t_lat; ++t) {
      // Latent frame t as a one-frame chunk [1, z_dim, H, W].
      Tensor chunk = wan_vae::new_frames(1, zc, h, w);
      for (std::int64_t c = 0; c < zc; ++c)
        std::memcpy(chunk.data_as<float>() + c * h * w, zf.data_as<float>() + ((b * zc + c) * t_lat + t) * h * w,
                    sizeof(float) * h * w);
      const Tensor out = decoder_->forward(chunk, cache, /*first_chunk=*/t == 0);
      if (t_out + out.dim(0) > video_shape[2] || out.dim(2) * config_.patch_size != video_shape[3])
        throw std::logic_error("Wan VAE decode: chunk " + out.describe() + " does not fit " + video.describe());
      write_frames(out, config_.patch_size, video, b, t_out);
      t_out += out.dim(0);
    }
    if (t_out != video_shape[2]) throw std::logic_error("Wan VAE decode: produced " + std::to_string(t_out) + " frames");
  }
  return video;
}

}  // namespace dattn
