// LTX-2's attention roles (see dattn/models/attention_roles.h).
#include "dattn/models/attention_roles.h"
#include "models/attention_roles/nominal_shape.h"

namespace dattn {

std::vector<AttentionRoleDecl> ltx2_attention_roles(DType dtype, Ltx2Tokens tokens) {
  // Both cross-modal attentions run in the audio stream's head geometry (diffusers LTX2 defaults:
  // audio_num_attention_heads 32, audio_attention_head_dim 64), whichever side queries.
  using roles_detail::nominal_shape;
  constexpr std::int64_t kHeads = 32, kHeadDim = 64;
  return {
      {"ltx2.audio_to_video", "cross", nominal_shape(tokens.video, tokens.audio, kHeads, kHeadDim, dtype),
       "transformer_blocks.*.audio_to_video_attn"},
      {"ltx2.video_to_audio", "cross", nominal_shape(tokens.audio, tokens.video, kHeads, kHeadDim, dtype),
       "transformer_blocks.*.video_to_audio_attn"},
  };
}

}  // namespace dattn
