// Random Qwen2.5-VL text model checkpoints (see qwen2_5_vl_random.h).
#include "dattn/models/qwen2_5_vl_random.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "dattn/core/error.h"
#include "dattn/core/files.h"

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

RandomCheckpointSummary write_random_qwen25vl_text_model(const std::string& config_path, const std::string& out_dir,
                                                         const RandomCheckpointOptions& options) {
  refuse_special_file(config_path, "config");
  std::ifstream in(config_path, std::ios::binary);
  if (!in) throw UserError(config_path + ": cannot open the config");
  std::stringstream ss;
  ss << in.rdbuf();
  const nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw UserError(config_path + ": not a JSON object");
  const auto config = Qwen25VLTextConfig::from_json(j, config_path);
  return write_random_params(out_dir, "model", ss.str(), qwen25vl_text_manifest(config), "Qwen2_5_VLTextModel", options);
}

}  // namespace dattn
