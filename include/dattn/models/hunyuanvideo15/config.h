#pragma once
// The configuration of a diffusers HunyuanVideo15Transformer3DModel (HunyuanVideo-1.5 480p/720p, T2V and
// I2V), read from transformer/config.json and validated when read.
#include <array>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace dattn {

// The most blocks a config may declare (num_layers, num_refiner_layers); the released model has 54 + 2.
inline constexpr std::int64_t kHv15MaxLayers = 1000;

struct HunyuanVideo15TransformerConfig {
  // Required: they define the architecture (diffusers' defaults are the 8.3B model's, which would
  // silently build the wrong one for a config that lacks them).
  std::int64_t in_channels = 0;
  std::int64_t out_channels = 0;
  std::int64_t num_attention_heads = 0;
  std::int64_t attention_head_dim = 0;
  std::int64_t num_layers = 0;
  std::int64_t text_embed_dim = 0;    // the Qwen2.5-VL hidden size
  std::int64_t text_embed_2_dim = 0;  // the ByT5 d_model
  std::int64_t image_embed_dim = 0;   // the SigLIP image embedding width (I2V; T2V passes zeros)
  std::array<std::int64_t, 3> rope_axes_dim{};  // (t, h, w) widths; they sum to attention_head_dim
  // Optional, with diffusers' defaults.
  std::int64_t num_refiner_layers = 2;
  double mlp_ratio = 4.0;
  std::int64_t patch_size = 1;    // spatial
  std::int64_t patch_size_t = 1;  // temporal
  double rope_theta = 256.0;
  std::string task_type = "i2v";  // "t2v" or "i2v"; the forward is the same, the pipeline differs
  // qk_norm must be "rms_norm"; use_meanflow must be false (the MeanFlow super-resolution models are not
  // supported).

  std::int64_t inner_dim() const { return num_attention_heads * attention_head_dim; }
  std::int64_t mlp_dim() const { return static_cast<std::int64_t>(static_cast<double>(inner_dim()) * mlp_ratio); }
  std::array<std::int64_t, 3> patch() const { return {patch_size_t, patch_size, patch_size}; }
  std::int64_t out_features() const { return out_channels * patch_size_t * patch_size * patch_size; }

  // Throws UserError naming `source`, the field, its value and what is expected.
  static HunyuanVideo15TransformerConfig from_json(const nlohmann::json& j, const std::string& source = "config.json");
  // Reads DIR/config.json.
  static HunyuanVideo15TransformerConfig load(const std::string& dir);
};

// The ByT5 projection's hidden width, hard-coded in diffusers (HunyuanVideo15ByT5TextProjection).
inline constexpr std::int64_t kHv15ByT5ProjectionWidth = 2048;

}  // namespace dattn
