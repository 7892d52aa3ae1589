#pragma once
// The Wan video VAE (diffusers AutoencoderKLWan), decode path: Wan2.1 (plain up blocks, no patch) and
// Wan2.2 (residual up blocks with duplicate-upsample shortcuts, patch size 2). Decoding runs one latent
// frame at a time with the causal-convolution frame cache, as diffusers does, so memory stays bounded
// by a few frames at the output resolution. CPU (float32) or CUDA (float32 activations, convolutions
// through cuDNN with TF32 tensor cores by default).
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "dattn/core/tensor.h"

namespace dattn {

// vae/config.json, validated when read. Field names are diffusers' (including its spelling "temperal").
struct WanVaeConfig {
  int base_dim = 96;          // encoder width; decode does not use it
  int decoder_base_dim = 96;  // "decoder_base_dim", base_dim when absent or null
  int z_dim = 16;
  std::vector<int> dim_mult = {1, 2, 4, 4};
  int num_res_blocks = 2;
  std::vector<double> attn_scales;  // used by the encoder only (diffusers' decoder ignores them)
  std::vector<bool> temperal_downsample = {false, true, true};
  double dropout = 0.0;  // training only
  std::vector<double> latents_mean, latents_std;  // z_dim values each
  bool is_residual = false;
  int in_channels = 3, out_channels = 3;  // channels after patchify / before unpatchify
  int patch_size = 1;                     // null in config.json means 1 (no patchify)
  int scale_factor_temporal = 4, scale_factor_spatial = 8;

  // Throws UserError naming `source`, the field, its value and what is expected.
  static WanVaeConfig from_json(const nlohmann::json& j, const std::string& source = "vae/config.json");
  // The config.json diffusers writes for these values (round-trips through from_json).
  nlohmann::json to_json() const;

  // The decoder upsamples in time where the encoder downsampled, in reverse order.
  std::vector<bool> temporal_upsample() const;
  int video_channels() const { return out_channels / (patch_size * patch_size); }
  // [B, z_dim, T, H, W] -> [B, video_channels, 1 + scale_t * (T - 1), H * scale_s, W * scale_s].
  Shape video_shape(const Shape& latent_shape) const;
};

// What the Wan pipelines do before vae.decode: z * latents_std + latents_mean per channel, on a
// [B, z_dim, ...] tensor (any float dtype; the result is float32). Throws UserError on a channel mismatch.
Tensor denormalize_latents(const Tensor& z, const WanVaeConfig& config);

// Names and shapes of every tensor the decoder reads (decoder.* and post_quant_conv.*, diffusers' names),
// for writing random-weight checkpoints and checking real ones.
std::vector<std::pair<std::string, Shape>> wan_vae_decoder_tensors(const WanVaeConfig& config);

// Writes `dir`/config.json and `dir`/diffusion_pytorch_model.safetensors holding the decoder's tensors
// with seeded random values (weights N(0, 1/fan_in), biases N(0, 0.02^2), norm gains 1 + N(0, 0.1^2)):
// a decode-only checkpoint for tests and benchmarks. Creates `dir`; throws UserError when it cannot.
void write_random_wan_vae_decoder(const std::string& dir, const WanVaeConfig& config, std::uint64_t seed);

namespace wan_vae {
class Decoder;
}

// The arithmetic of the CUDA decoder's convolutions. TF32 (the default, as PyTorch runs convolutions):
// tensor cores round each operand to 10 mantissa bits and accumulate in float32, about 1e-3 relative
// error per product, which averages to ~1e-4 relative L2 on a decoded video. FP32: float32 FMA
// algorithms only, within ~1e-6 of the CPU, several times slower. The CPU decoder is always FP32.
enum class WanVaeConvMath { TF32, FP32 };

class WanVae {
 public:
  // Reads `dir`/config.json and the decoder's weights (decoder.* and post_quant_conv.*) from `dir`.
  // The encoder's tensors may be present and are left unread; any other unexpected tensor is an error.
  // `device` CUDA uploads the weights to the GPU (a UserError when this build has no CUDA or no GPU is
  // visible). `dtype`: the decoder's activations, F32 (either device) or BF16 (CUDA only: activations,
  // frame caches and convolution weights in bf16, converted on the GPU at load; cuDNN accumulates in
  // float32, the norms and the mid-block attention compute in float32; the video stays float32). The CPU
  // decoder is fp32 only (its im2col + sgemm convolutions have no bf16 path): BF16 there is a UserError.
  // `conv_math` applies to fp32 on CUDA only.
  static WanVae load(const std::string& dir, Device device = Device::CPU, DType dtype = DType::F32,
                     WanVaeConvMath conv_math = WanVaeConvMath::TF32);

  const WanVaeConfig& config() const { return config_; }
  Device device() const { return device_; }
  DType dtype() const { return dtype_; }

  // z [B, z_dim, T, H, W] (any float dtype, on any device) -> video [B, video_channels, T', H', W'] in
  // float32 on the VAE's device, clamped to [-1, 1] as diffusers' decode does. No de-normalisation (see
  // denormalize_latents).
  // One latent frame at a time and each later frame on its own through the up blocks, so memory stays
  // at the weights, the video, the frame caches and a few frames at the output resolution (on CUDA 12.5
  // GiB for Wan2.2-TI2V-5B at 704x1280x49, 6.3 GiB of it the caches). The same layers on both devices
  // (ops::CausalConv3d and the frame ops). CPU: the convolutions run on the OpenMP threads with OpenBLAS
  // set to one thread meanwhile (ops' BlasSingleThread): do not run other OpenBLAS work concurrently from
  // another thread. CUDA: on the current run context's stream; returns after the GPU finished.
  // `frames_done`, when given, is called whenever more output frames are final in the video (its
  // storage is the one returned): (video, batch item, frames of that item done so far), so that a caller
  // can take them while the rest decodes (after each latent frame). The frames are queued on the
  // stream, not yet finished.
  using FramesDone = std::function<void(const Tensor& video, std::int64_t b, std::int64_t frames_done)>;
  Tensor decode(const Tensor& z, const FramesDone& frames_done = {}) const;

  // Decodes a latent of zeros of 2 frames of 2x2 and drops the video: on CUDA the first use of each
  // convolution kernel (module loading and cuDNN's set-up, about 0.33 s of Wan2.2-5B's first full decode
  // on the H200) then happens here, e.g. beside the denoising, not in the first real decode. Changes no
  // later decode's result.
  void warm_up() const;

  // For tests: the most bytes the mid-block attention's score block may take (its queries are processed
  // in blocks of rows that fit); 0 restores the default.
  void set_attention_score_bytes(std::int64_t bytes);

  ~WanVae();
  WanVae(WanVae&&) noexcept;
  WanVae& operator=(WanVae&&) noexcept;

 private:
  WanVae();
  WanVaeConfig config_;
  Device device_ = Device::CPU;
  DType dtype_ = DType::F32;
  std::unique_ptr<wan_vae::Decoder> decoder_;
};

}  // namespace dattn
