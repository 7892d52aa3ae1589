// HunyuanVideo-1.5's attention roles (see dattn/models/attention_roles.h).
#include "dattn/models/attention_roles.h"
#include "models/attention_roles/nominal_shape.h"

namespace dattn {

std::vector<AttentionRoleDecl> hunyuanvideo15_attention_roles(DType dtype, std::int64_t video_tokens) {
  // The text stream is always packed to 729 image + 256 ByT5 + 1000 Qwen tokens, valid ones first, so
  // its padding is a key-padding mask (diffusers HunyuanVideo15AttnProcessor2_0). The call has no role
  // of its own: it resolves as "self".
  constexpr std::int64_t kTextTokens = 729 + 256 + 1000;
  const std::int64_t joint = video_tokens + kTextTokens;
  return {{"self", std::nullopt,
           roles_detail::nominal_shape(joint, joint, 16, 128, dtype, MaskKind::KeyPadding),
           "transformer_blocks.*.attn"}};
}

}  // namespace dattn
