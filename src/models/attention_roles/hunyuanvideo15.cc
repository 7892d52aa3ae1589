// HunyuanVideo-1.5's attention roles (see dattn/models/attention_roles.h).
#include "dattn/models/attention_roles.h"
#include "models/attention_roles/nominal_shape.h"

namespace dattn {

HunyuanVideo15TransformerConfig hunyuanvideo15_480p_t2v_config() {
  // hunyuanvideo-community/HunyuanVideo-1.5-Diffusers-480p_t2v transformer/config.json
  // (configs/hunyuanvideo1.5-480p-t2v/transformer.json).
  HunyuanVideo15TransformerConfig c;
  c.in_channels = 65;
  c.out_channels = 32;
  c.num_attention_heads = 16;
  c.attention_head_dim = 128;
  c.num_layers = 54;
  c.num_refiner_layers = 2;
  c.text_embed_dim = 3584;
  c.text_embed_2_dim = 1472;
  c.image_embed_dim = 1152;
  c.rope_axes_dim = {16, 56, 56};
  c.task_type = "t2v";
  return c;
}

std::vector<AttentionRoleDecl> hunyuanvideo15_attention_roles(const HunyuanVideo15TransformerConfig& config,
                                                              DType dtype, Hv15Tokens tokens) {
  // Both attentions hide padded text tokens as keys (diffusers builds outer(valid, valid) masks; a padded
  // query row never reaches the output, so a key-padding mask is the same problem for what is kept).
  const std::int64_t heads = config.num_attention_heads, d = config.attention_head_dim;
  const std::int64_t joint = tokens.video + tokens.text;
  return {{"self", std::nullopt, roles_detail::nominal_shape(joint, joint, heads, d, dtype, MaskKind::KeyPadding),
           "transformer_blocks.*.attn"},
          {"hunyuanvideo15.refiner", "self",
           roles_detail::nominal_shape(tokens.qwen, tokens.qwen, heads, d, dtype, MaskKind::KeyPadding),
           "context_embedder.token_refiner.refiner_blocks.*.attn"}};
}

}  // namespace dattn
