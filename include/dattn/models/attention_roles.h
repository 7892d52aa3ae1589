#pragma once
// The attention roles each model family declares: the role its layers resolve under, the category a
// per_role entry falls back to, the shape a layer is resolved and checked for before any input exists,
// and the modules that hold the layers. Model knowledge, kept here so that attention/ stays generic.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dattn/attention/config.h"
#include "dattn/attention/problem.h"
#include "dattn/core/dtype.h"
#include "dattn/models/hunyuanvideo15/config.h"
#include "dattn/models/wan/config.h"

namespace dattn {

struct AttentionRoleDecl {
  std::string role;                     // "self", "cross", "ltx2.audio_to_video"
  std::optional<std::string> category;  // per_role fallback key; none when the role is a category itself
  AttentionShape nominal;               // heads, head dim, dtype and mask are the model's; lengths nominal
  std::string module;                   // the layers' module paths, e.g. "blocks.*.attn1"
};

// Token counts of one Wan call: video tokens after patchifying, and text tokens (umT5 pads to 512).
struct WanTokens {
  std::int64_t video = 1024;
  std::int64_t text = 512;
};

// Wan2.1 / Wan2.2: "self" (blocks.*.attn1, video to video) and "cross" (blocks.*.attn2, video to text),
// no category (both are categories themselves); heads and head dim from `config`, in `dtype`.
std::vector<AttentionRoleDecl> wan_attention_roles(const WanTransformerConfig& config, DType dtype,
                                                   WanTokens tokens = {});

// Token counts of one HunyuanVideo-1.5 call: video tokens, the packed text stream of the joint attention
// (at most 729 image + 256 ByT5 + 1000 Qwen tokens; dattn keeps only the valid ones) and the Qwen tokens
// of the refiner.
struct Hv15Tokens {
  std::int64_t video = 1024;
  std::int64_t text = 729 + 256 + 1000;
  std::int64_t qwen = 1000;
};

// HunyuanVideo-1.5: "self" (transformer_blocks.*.attn, the joint attention over video then text) and
// "hunyuanvideo15.refiner" (category "self": context_embedder.token_refiner.refiner_blocks.*.attn, over
// the Qwen text), both with key padding, heads and head dim from `config`, in `dtype`.
std::vector<AttentionRoleDecl> hunyuanvideo15_attention_roles(const HunyuanVideo15TransformerConfig& config,
                                                              DType dtype, Hv15Tokens tokens = {});
// HunyuanVideo-1.5-480p T2V's transformer config, as published.
HunyuanVideo15TransformerConfig hunyuanvideo15_480p_t2v_config();

// LTX-2: the cross-modal attentions, category "cross", in the audio head geometry (32 heads x 64):
// ltx2.audio_to_video (transformer_blocks.*.audio_to_video_attn, queries video, keys audio) and
// ltx2.video_to_audio (transformer_blocks.*.video_to_audio_attn, queries audio, keys video).
struct Ltx2Tokens {
  std::int64_t video = 1024;
  std::int64_t audio = 256;
};
std::vector<AttentionRoleDecl> ltx2_attention_roles(DType dtype, Ltx2Tokens tokens = {});

// Qwen2.5-VL's text model (HunyuanVideo-1.5's first text encoder): role "text_encoder.self", category
// "self", the layers "layers.*.self_attn": causal grouped-query attention with key padding (right-padded
// prompts), `tokens` long, heads and head dim from `config`, in `dtype`.
struct Qwen25VLTextConfig;
std::vector<AttentionRoleDecl> qwen2_5_vl_text_attention_roles(const Qwen25VLTextConfig& config, DType dtype,
                                                               std::int64_t tokens = 1108);

// The category of a role a model family declares ("ltx2.audio_to_video" -> "cross"); none for roles that
// are categories themselves ("self", "cross") and for unknown roles.
std::optional<std::string> known_role_category(const std::string& role);

// The declaration of `role` among `decls`; ConfigError naming the role and the declared ones otherwise.
const AttentionRoleDecl& find_role(const std::vector<AttentionRoleDecl>& decls, const std::string& role);

// Every per_role key of `config` must name a role or a category that `decls` declare; a ConfigError
// names the first key that does not, the closest declared name and the declared ones (a typo such as
// per_role.slef would otherwise be ignored and its layers run on the default). `model` names the model.
void check_per_role_keys(const AttentionConfig& config, const std::vector<AttentionRoleDecl>& decls,
                         const std::string& model);

// Wan2.2-TI2V-5B's transformer config, as published (configs/wan2.2-ti2v-5b/transformer.json).
WanTransformerConfig wan22_ti2v_5b_config();
// The shape to check when no problem is given (`dattn backends`, `dattn resolve`): Wan2.2-TI2V-5B's
// self-attention at 704x1280, 49 frames (11440 video tokens), in `dtype`.
AttentionShape reference_attention_shape(DType dtype);

}  // namespace dattn
