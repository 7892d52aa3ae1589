#pragma once
// The configuration of a diffusers WanTransformer3DModel (Wan2.1 and Wan2.2, T2V and TI2V), read from
// transformer/config.json and validated when read.
#include <array>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace dattn {

// The most transformer blocks a config may declare (num_layers); real models have 30 to 40.
inline constexpr std::int64_t kWanMaxLayers = 1000;

struct WanTransformerConfig {
  // Required: they define the architecture, and diffusers' defaults (the 14B model) would silently
  // build the wrong one for a config that lacks them.
  std::array<std::int64_t, 3> patch_size{};  // (t, h, w)
  std::int64_t num_attention_heads = 0;
  std::int64_t attention_head_dim = 0;
  std::int64_t in_channels = 0;
  std::int64_t text_dim = 0;
  std::int64_t freq_dim = 0;
  std::int64_t ffn_dim = 0;
  std::int64_t num_layers = 0;
  // Optional, with diffusers' defaults. out_channels null or absent means in_channels.
  std::int64_t out_channels = 0;
  bool cross_attn_norm = true;
  double eps = 1e-6;
  std::int64_t rope_max_seq_len = 1024;
  // Accepted only as "rms_norm_across_heads" (every released Wan checkpoint); image_dim and
  // added_kv_proj_dim must be null (image-to-video models with CLIP image conditioning are not supported).

  std::int64_t inner_dim() const { return num_attention_heads * attention_head_dim; }
  // Width of proj_out: out_channels values per position of a patch.
  std::int64_t out_features() const { return out_channels * patch_size[0] * patch_size[1] * patch_size[2]; }

  // Throws UserError naming `source`, the field, its value and what is expected. Unknown fields
  // (_diffusers_version, pos_embed_seq_len...) are ignored.
  static WanTransformerConfig from_json(const nlohmann::json& j, const std::string& source = "config.json");
  // Reads DIR/config.json.
  static WanTransformerConfig load(const std::string& dir);
};

}  // namespace dattn
