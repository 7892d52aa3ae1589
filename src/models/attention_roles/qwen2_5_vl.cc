// Qwen2.5-VL text model's attention role (see dattn/models/attention_roles.h).
#include "dattn/models/attention_roles.h"
#include "dattn/models/qwen2_5_vl.h"
#include "models/attention_roles/nominal_shape.h"

namespace dattn {

std::vector<AttentionRoleDecl> qwen2_5_vl_text_attention_roles(const Qwen25VLTextConfig& config, DType dtype,
                                                               std::int64_t tokens) {
  // A role of its own, so that per_role can pick the text encoder's backend apart from the DiT's joint
  // "self"; its category "self" makes a per_role "self" entry apply to both.
  AttentionShape s = roles_detail::nominal_shape(tokens, tokens, config.num_heads, config.head_dim, dtype,
                                                 MaskKind::Causal);
  s.heads_kv = config.num_kv_heads;
  return {{kQwenTextEncoderRole, std::string("self"), s, "layers.*.self_attn"}};
}

}  // namespace dattn
