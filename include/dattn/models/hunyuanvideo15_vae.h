#pragma once
// The HunyuanVideo-1.5 video VAE (diffusers AutoencoderKLHunyuanVideo15), decode path: causal convolutions
// padded by replication, RMS channel norms, one frame-causal attention block in the middle, and DC-AE
// style up-sampling (channels unpacked into space and time, plus a channel-repeat shortcut). Decoding
// streams one latent frame at a time through the causal convolutions' frame caches and the attention's
// key/value cache, so memory stays bounded by a few frames at each resolution (see decode_memory). CPU
// (float32) or CUDA (float32 activations, convolutions through cuDNN in TF32 by default).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dattn/core/tensor.h"
#include "dattn/models/param_spec.h"

namespace dattn {

// vae/config.json, validated when read; absent fields take diffusers' defaults (those of the released
// checkpoint: configs/hunyuanvideo1.5-480p-t2v/README.md).
struct HunyuanVideo15VaeConfig {
  int in_channels = 3, out_channels = 3;
  int latent_channels = 32;
  std::vector<int> block_out_channels = {128, 256, 512, 1024, 1024};  // encoder order; the decoder reverses it
  int layers_per_block = 2;
  int spatial_compression_ratio = 16, temporal_compression_ratio = 4;  // powers of two
  bool downsample_match_channel = true;  // encoder only
  bool upsample_match_channel = true;
  double scaling_factor = 1.03682;  // the pipeline divides latents by it before decode

  // Throws UserError naming `source`, the field, its value and what is expected.
  static HunyuanVideo15VaeConfig from_json(const nlohmann::json& j, const std::string& source = "vae/config.json");
  // The config.json diffusers writes for these values (round-trips through from_json).
  nlohmann::json to_json() const;

  // The decoder's widths: block_out_channels reversed (conv_in and the middle run at the first).
  std::vector<int> decoder_channels() const;
  // Up block i up-samples in space when i < log2(spatial ratio), in time when i < log2(temporal ratio).
  bool spatial_upsample(int block) const;
  bool temporal_upsample(int block) const;
  // [B, latent_channels, T, H, W] -> [B, out_channels, 1 + ratio_t * (T - 1), H * ratio_s, W * ratio_s].
  Shape video_shape(const Shape& latent_shape) const;
};

// What the pipeline does before vae.decode: z / scaling_factor, on [B, latent_channels, ...] (any float
// dtype; the result is float32 on z's device). Throws UserError on a channel mismatch.
Tensor hunyuanvideo15_unscale_latents(const Tensor& z, const HunyuanVideo15VaeConfig& config);

// Every tensor the decoder reads (decoder.*, diffusers' names) with its shape and kind, all kept in
// float32: what loading takes and what `dattn make-checkpoint` writes for an AutoencoderKLHunyuanVideo15
// config (a decode-only checkpoint; see random_checkpoint.h for the random values).
std::vector<ParamSpec> hunyuanvideo15_vae_decoder_manifest(const HunyuanVideo15VaeConfig& config);

// The decode's memory on its device, in bytes, by part (a model of the streamed decode, not a measurement):
// the weights, the output video, the causal convolutions' frame caches (kt - 1 = 2 input frames per 3x3x3
// conv, at that conv's resolution), the attention's key/value cache (every latent frame's pixels), and the
// working set of the widest step (the largest stream buffer plus a few frames at that resolution).
struct HunyuanVideo15VaeMemory {
  std::int64_t weights = 0, video = 0, frame_caches = 0, attention_cache = 0, working = 0;
  std::int64_t total() const { return weights + video + frame_caches + attention_cache + working; }
};
HunyuanVideo15VaeMemory hunyuanvideo15_vae_decode_memory(const HunyuanVideo15VaeConfig& config,
                                                         const Shape& latent_shape);

namespace hunyuanvideo15_vae {
class Decoder;
}

// The arithmetic of the CUDA decoder's convolutions: TF32 (the default, as PyTorch runs convolutions) or
// FP32 (float32 FMA algorithms only, within ~1e-6 of the CPU). The CPU decoder is always FP32.
enum class HunyuanVideo15VaeConvMath { TF32, FP32 };

class HunyuanVideo15Vae {
 public:
  // Reads `dir`/config.json and the decoder's weights (decoder.*) from `dir`. The encoder's tensors may be
  // present and are left unread; any other unexpected tensor is an error. `device` CUDA uploads the
  // weights to the GPU (a UserError when this build has no CUDA or no GPU is visible). `dtype`: the
  // decoder's activations, F32 (either device) or BF16 (CUDA only, as WanVae::load: bf16 activations,
  // frame caches and convolution weights, float32 accumulation, norms and attention; the video float32).
  // The CPU decoder is fp32 only: BF16 there is a UserError. `conv_math` applies to fp32 on CUDA.
  static HunyuanVideo15Vae load(const std::string& dir, Device device = Device::CPU, DType dtype = DType::F32,
                                HunyuanVideo15VaeConvMath conv_math = HunyuanVideo15VaeConvMath::TF32);

  const HunyuanVideo15VaeConfig& config() const { return config_; }
  Device device() const { return device_; }
  DType dtype() const { return dtype_; }

  // z [B, latent_channels, T, H, W] (any float dtype, on any device; already divided by scaling_factor)
  // -> video [B, out_channels, 1 + 4 (T - 1), 16 H, 16 W] float32 on the VAE's device, not clamped (as
  // diffusers' decode). One latent frame at a time, each frame an up block makes going on alone through
  // the later stages: memory as hunyuanvideo15_vae_decode_memory. CPU: the convolutions run on the OpenMP
  // threads with OpenBLAS single-threaded meanwhile (do not run other OpenBLAS work concurrently). CUDA:
  // on the current run context's stream; returns after the GPU finished.
  Tensor decode(const Tensor& z) const;

  // Decodes a latent of zeros of 2 frames of 2x2 and drops the video: on CUDA the first use of each
  // convolution kernel (module loading and cuDNN's set-up; WanVae::warm_up) then happens here, e.g.
  // beside the denoising, not in the first real decode. Changes no later decode's result.
  void warm_up() const;

  // For tests: the most bytes the mid-block attention's score block may take (its queries are processed
  // in blocks of rows that fit); 0 restores the default.
  void set_attention_score_bytes(std::int64_t bytes);

  ~HunyuanVideo15Vae();
  HunyuanVideo15Vae(HunyuanVideo15Vae&&) noexcept;
  HunyuanVideo15Vae& operator=(HunyuanVideo15Vae&&) noexcept;

 private:
  HunyuanVideo15Vae();
  HunyuanVideo15VaeConfig config_;
  Device device_ = Device::CPU;
  DType dtype_ = DType::F32;
  std::unique_ptr<hunyuanvideo15_vae::Decoder> decoder_;
};

}  // namespace dattn
