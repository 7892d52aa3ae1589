// The attention roles the model families declare: names, categories, modules and nominal shapes.
#include <fstream>

#include <gtest/gtest.h>

#include "dattn/models/attention_roles.h"
#include "support/config_error.h"
#include "support/golden_dir.h"

namespace dattn {
namespace {

TEST(AttentionRoles, KnownRoleCategories) {
  EXPECT_EQ(known_role_category("ltx2.audio_to_video"), "cross");
  EXPECT_EQ(known_role_category("ltx2.video_to_audio"), "cross");
  EXPECT_EQ(known_role_category("self"), std::nullopt);  // Wan's roles are categories themselves
  EXPECT_EQ(known_role_category("cross"), std::nullopt);
  EXPECT_EQ(known_role_category("ltx2"), std::nullopt);
}

TEST(AttentionRoles, WanSelfAndCross) {
  const auto roles = wan_attention_roles(wan22_ti2v_5b_config(), DType::BF16);
  ASSERT_EQ(roles.size(), 2u);
  const AttentionRoleDecl& self = find_role(roles, "self");
  EXPECT_EQ(self.category, std::nullopt);
  EXPECT_EQ(self.module, "blocks.*.attn1");
  EXPECT_EQ(self.nominal.describe(), "B=1 Sq=1024 Sk=1024 Hq=24 Hkv=24 D=128 bf16 no-mask");
  const AttentionRoleDecl& cross = find_role(roles, "cross");
  EXPECT_EQ(cross.module, "blocks.*.attn2");
  EXPECT_EQ(cross.nominal.describe(), "B=1 Sq=1024 Sk=512 Hq=24 Hkv=24 D=128 bf16 no-mask");
}

TEST(AttentionRoles, Wan22FiveBillionConfigIsThePublishedOne) {
  const std::string file = testing::golden_dir() + "/configs/wan2.2-ti2v-5b.transformer.json";
  std::ifstream in(file);
  ASSERT_TRUE(in) << file;
  const WanTransformerConfig published = WanTransformerConfig::from_json(nlohmann::json::parse(in), file);
  const WanTransformerConfig c = wan22_ti2v_5b_config();
  EXPECT_EQ(c.patch_size, published.patch_size);
  EXPECT_EQ(c.num_attention_heads, published.num_attention_heads);
  EXPECT_EQ(c.attention_head_dim, published.attention_head_dim);
  EXPECT_EQ(c.in_channels, published.in_channels);
  EXPECT_EQ(c.out_channels, published.out_channels);
  EXPECT_EQ(c.text_dim, published.text_dim);
  EXPECT_EQ(c.freq_dim, published.freq_dim);
  EXPECT_EQ(c.ffn_dim, published.ffn_dim);
  EXPECT_EQ(c.num_layers, published.num_layers);
  EXPECT_EQ(c.cross_attn_norm, published.cross_attn_norm);
  EXPECT_EQ(c.eps, published.eps);
  EXPECT_EQ(c.rope_max_seq_len, published.rope_max_seq_len);
}

TEST(AttentionRoles, ReferenceShapeIsWan22FiveBillionSelfAttention) {
  EXPECT_EQ(reference_attention_shape(DType::BF16).describe(), "B=1 Sq=11440 Sk=11440 Hq=24 Hkv=24 D=128 bf16 no-mask");
  EXPECT_EQ(reference_attention_shape(DType::F32).dtype, DType::F32);
}

TEST(AttentionRoles, HunyuanVideo15JointAttentionIsSelfAndTheRefinerFallsBackToSelf) {
  const auto roles = hunyuanvideo15_attention_roles(hunyuanvideo15_480p_t2v_config(), DType::BF16, {1000, 1985, 1000});
  ASSERT_EQ(roles.size(), 2u);
  EXPECT_EQ(roles[0].role, "self");
  EXPECT_EQ(roles[0].category, std::nullopt);
  EXPECT_EQ(roles[0].module, "transformer_blocks.*.attn");
  EXPECT_EQ(roles[0].nominal.describe(), "B=1 Sq=2985 Sk=2985 Hq=16 Hkv=16 D=128 bf16 key-padding");
  EXPECT_EQ(roles[1].role, "hunyuanvideo15.refiner");
  EXPECT_EQ(roles[1].category, "self");
  EXPECT_EQ(roles[1].module, "context_embedder.token_refiner.refiner_blocks.*.attn");
  EXPECT_EQ(roles[1].nominal.describe(), "B=1 Sq=1000 Sk=1000 Hq=16 Hkv=16 D=128 bf16 key-padding");
  EXPECT_EQ(known_role_category("hunyuanvideo15.refiner"), "self");
}

TEST(AttentionRoles, HunyuanVideo15PublishedConfigMatchesTheShippedFile) {
  const std::string file = testing::golden_dir() + "/configs/hunyuanvideo1.5-480p-t2v.transformer.json";
  std::ifstream in(file);
  ASSERT_TRUE(in) << file;
  const auto published = HunyuanVideo15TransformerConfig::from_json(nlohmann::json::parse(in), file);
  const auto c = hunyuanvideo15_480p_t2v_config();
  EXPECT_EQ(c.inner_dim(), published.inner_dim());
  EXPECT_EQ(c.num_layers, published.num_layers);
  EXPECT_EQ(c.in_channels, published.in_channels);
  EXPECT_EQ(c.text_embed_dim, published.text_embed_dim);
  EXPECT_EQ(c.text_embed_2_dim, published.text_embed_2_dim);
  EXPECT_EQ(c.rope_axes_dim, published.rope_axes_dim);
}

TEST(AttentionRoles, Ltx2CrossModalRolesAreCross) {
  const auto roles = ltx2_attention_roles(DType::BF16, {4000, 100});
  ASSERT_EQ(roles.size(), 2u);
  const AttentionRoleDecl& a2v = find_role(roles, "ltx2.audio_to_video");
  EXPECT_EQ(a2v.category, "cross");
  EXPECT_EQ(a2v.module, "transformer_blocks.*.audio_to_video_attn");
  EXPECT_EQ(a2v.nominal.describe(), "B=1 Sq=4000 Sk=100 Hq=32 Hkv=32 D=64 bf16 no-mask");  // queries video
  const AttentionRoleDecl& v2a = find_role(roles, "ltx2.video_to_audio");
  EXPECT_EQ(v2a.category, "cross");
  EXPECT_EQ(v2a.nominal.describe(), "B=1 Sq=100 Sk=4000 Hq=32 Hkv=32 D=64 bf16 no-mask");  // queries audio
}

TEST(AttentionRoles, UndeclaredRoleNamesTheDeclaredOnes) {
  const auto roles = wan_attention_roles(wan22_ti2v_5b_config(), DType::F32);
  EXPECT_EQ(config_error([&] { find_role(roles, "joint"); }),
            "attention role 'joint' is not declared; expected one of 'self', 'cross'");
}

// per_role keys must name a role or category the model declares: a typo used to be ignored silently.
TEST(AttentionRoles, PerRoleKeysMustNameADeclaredRoleOrCategory) {
  const auto wan = wan_attention_roles(wan22_ti2v_5b_config(), DType::F32);
  const auto config = [](const char* text) { return AttentionConfig::from_json_string(text); };
  EXPECT_NO_THROW(check_per_role_keys(config(R"({"per_role": {"self": "FLASH_ATTN", "cross": "TORCH_SDPA"}})"), wan, "Wan"));
  EXPECT_NO_THROW(check_per_role_keys(config(R"({"default": "TORCH_SDPA"})"), wan, "Wan"));
  EXPECT_EQ(config_error([&] { check_per_role_keys(config(R"({"per_role": {"slef": "TORCH_SDPA"}})"), wan, "Wan"); }),
            "per_role key 'slef' matches no attention role of Wan; did you mean 'self'? (its roles: 'self', 'cross')");
  // Nothing close: no suggestion.
  EXPECT_EQ(config_error([&] { check_per_role_keys(config(R"({"per_role": {"ltx2.audio_to_video": "SDPA"}})"), wan, "Wan"); }),
            "per_role key 'ltx2.audio_to_video' matches no attention role of Wan (its roles: 'self', 'cross')");
  // A family whose roles fall back to a category accepts the category as a key.
  const auto ltx2 = ltx2_attention_roles(DType::BF16);
  EXPECT_NO_THROW(check_per_role_keys(config(R"({"per_role": {"cross": "TORCH_SDPA", "ltx2.video_to_audio": "SDPA"}})"),
                                      ltx2, "LTX-2"));
}

}  // namespace
}  // namespace dattn
