// Parameter lists of the transformers text encoders (see text_encoder_manifest.h).
#include "dattn/models/text_encoder_manifest.h"

#include <string>

namespace dattn {

std::vector<ParamSpec> qwen25vl_text_manifest(const Qwen25VLTextConfig& c) {
  const std::int64_t h = c.hidden_size, q = c.num_heads * c.head_dim, kv = c.num_kv_heads * c.head_dim;
  std::vector<ParamSpec> m;
  m.push_back({"embed_tokens.weight", {c.vocab_size, h}, ParamKind::Embedding});
  for (std::int64_t i = 0; i < c.num_layers; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    m.push_back({p + "input_layernorm.weight", {h}, ParamKind::NormWeight});
    m.push_back({p + "self_attn.q_proj.weight", {q, h}, ParamKind::Weight});
    m.push_back({p + "self_attn.q_proj.bias", {q}, ParamKind::Bias});
    m.push_back({p + "self_attn.k_proj.weight", {kv, h}, ParamKind::Weight});
    m.push_back({p + "self_attn.k_proj.bias", {kv}, ParamKind::Bias});
    m.push_back({p + "self_attn.v_proj.weight", {kv, h}, ParamKind::Weight});
    m.push_back({p + "self_attn.v_proj.bias", {kv}, ParamKind::Bias});
    m.push_back({p + "self_attn.o_proj.weight", {h, q}, ParamKind::Weight});
    m.push_back({p + "post_attention_layernorm.weight", {h}, ParamKind::NormWeight});
    m.push_back({p + "mlp.gate_proj.weight", {c.intermediate_size, h}, ParamKind::Weight});
    m.push_back({p + "mlp.up_proj.weight", {c.intermediate_size, h}, ParamKind::Weight});
    m.push_back({p + "mlp.down_proj.weight", {h, c.intermediate_size}, ParamKind::Weight});
  }
  m.push_back({"norm.weight", {h}, ParamKind::NormWeight});
  return m;
}

std::vector<ParamSpec> t5_encoder_manifest(const T5EncoderConfig& c) {
  const std::int64_t d = c.d_model, inner = c.num_heads * c.d_kv;
  std::vector<ParamSpec> m;
  m.push_back({"shared.weight", {c.vocab_size, d}, ParamKind::Embedding});
  for (std::int64_t i = 0; i < c.num_layers; ++i) {
    const std::string p = "encoder.block." + std::to_string(i) + ".layer.";
    for (const char* n : {"q", "k", "v"}) m.push_back({p + "0.SelfAttention." + n + ".weight", {inner, d}, ParamKind::Weight});
    m.push_back({p + "0.SelfAttention.o.weight", {d, inner}, ParamKind::Weight});
    if (i == 0 || !c.shared_position_bias)
      m.push_back({p + "0.SelfAttention.relative_attention_bias.weight", {c.num_buckets, c.num_heads}, ParamKind::Bias});
    m.push_back({p + "0.layer_norm.weight", {d}, ParamKind::NormWeight});
    m.push_back({p + "1.DenseReluDense.wi_0.weight", {c.d_ff, d}, ParamKind::Weight});
    m.push_back({p + "1.DenseReluDense.wi_1.weight", {c.d_ff, d}, ParamKind::Weight});
    m.push_back({p + "1.DenseReluDense.wo.weight", {d, c.d_ff}, ParamKind::Weight});
    m.push_back({p + "1.layer_norm.weight", {d}, ParamKind::NormWeight});
  }
  m.push_back({"encoder.final_layer_norm.weight", {d}, ParamKind::NormWeight});
  return m;
}

}  // namespace dattn
