// Wan's attention roles and the Wan2.2-TI2V-5B reference shape (see dattn/models/attention_roles.h).
#include "dattn/models/attention_roles.h"
#include "models/attention_roles/nominal_shape.h"

namespace dattn {

std::vector<AttentionRoleDecl> wan_attention_roles(const WanTransformerConfig& config, DType dtype, WanTokens tokens) {
  using roles_detail::nominal_shape;
  const std::int64_t heads = config.num_attention_heads, dim = config.attention_head_dim;
  return {
      {"self", std::nullopt, nominal_shape(tokens.video, tokens.video, heads, dim, dtype), "blocks.*.attn1"},
      {"cross", std::nullopt, nominal_shape(tokens.video, tokens.text, heads, dim, dtype), "blocks.*.attn2"},
  };
}

WanTransformerConfig wan22_ti2v_5b_config() {
  WanTransformerConfig c;
  c.patch_size = {1, 2, 2};
  c.num_attention_heads = 24;
  c.attention_head_dim = 128;
  c.in_channels = 48;
  c.out_channels = 48;
  c.text_dim = 4096;
  c.freq_dim = 256;
  c.ffn_dim = 14336;
  c.num_layers = 30;
  c.cross_attn_norm = true;
  c.eps = 1e-6;
  c.rope_max_seq_len = 1024;
  return c;
}

AttentionShape reference_attention_shape(DType dtype) {
  // 704x1280, 49 frames: 13 latent frames of 44x80 (the VAE's 4x/16x), patch 1x2x2 -> 13 * 22 * 40 tokens.
  const WanTokens tokens{13 * 22 * 40, 512};
  return find_role(wan_attention_roles(wan22_ti2v_5b_config(), dtype, tokens), "self").nominal;
}

}  // namespace dattn
