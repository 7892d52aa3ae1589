// WanTransformerConfig and the parameter manifest: required and optional fields, the errors a user sees,
// and the manifest against the golden checkpoint and the real models' sizes.
#include <fstream>

#include <gtest/gtest.h>

#include "dattn/core/error.h"
#include "dattn/io/weight_store.h"
#include "dattn/models/wan/manifest.h"
#include "ops/op_test_util.h"
#include "support/golden_dir.h"

namespace dattn::testing {
namespace {

using json = nlohmann::json;

json tiny_config() {
  std::ifstream in(golden_dir() + "/wan_tiny/pipeline/transformer/config.json");
  return json::parse(in);
}

std::string config_error(const json& j) {
  return user_error([&] { WanTransformerConfig::from_json(j, "transformer/config.json"); });
}

TEST(WanConfig, ReadsTheGoldenConfig) {
  const auto c = WanTransformerConfig::load(golden_dir() + "/wan_tiny/pipeline/transformer");
  EXPECT_EQ(c.patch_size, (std::array<std::int64_t, 3>{1, 2, 2}));
  EXPECT_EQ(c.num_attention_heads, 2);
  EXPECT_EQ(c.attention_head_dim, 64);
  EXPECT_EQ(c.inner_dim(), 128);
  EXPECT_EQ(c.in_channels, 8);
  EXPECT_EQ(c.out_channels, 8);
  EXPECT_EQ(c.text_dim, 32);
  EXPECT_EQ(c.ffn_dim, 128);
  EXPECT_EQ(c.num_layers, 2);
  EXPECT_TRUE(c.cross_attn_norm);
  EXPECT_DOUBLE_EQ(c.eps, 1e-6);
  EXPECT_EQ(c.out_features(), 32);
}

TEST(WanConfig, OptionalFieldsTakeDiffusersDefaults) {
  json j = tiny_config();
  for (const char* k : {"out_channels", "cross_attn_norm", "eps", "rope_max_seq_len", "qk_norm", "image_dim",
                        "_class_name", "_diffusers_version", "pos_embed_seq_len"})
    j.erase(k);
  j["some_future_field"] = 42;  // unknown fields are ignored
  const auto c = WanTransformerConfig::from_json(j);
  EXPECT_EQ(c.out_channels, c.in_channels);
  EXPECT_TRUE(c.cross_attn_norm);
  EXPECT_DOUBLE_EQ(c.eps, 1e-6);
  EXPECT_EQ(c.rope_max_seq_len, 1024);
  j["out_channels"] = nullptr;  // "out_channels or in_channels"
  EXPECT_EQ(WanTransformerConfig::from_json(j).out_channels, 8);
}

TEST(WanConfig, ErrorsNameTheFileTheFieldAndTheValue) {
  json j = tiny_config();
  j.erase("num_layers");
  EXPECT_EQ(config_error(j),
            "transformer/config.json: 'num_layers' must be a positive integer (required), got nothing (the field is "
            "missing)");
  j = tiny_config();
  j["attention_head_dim"] = "64";
  EXPECT_EQ(config_error(j), "transformer/config.json: 'attention_head_dim' must be a positive integer, got \"64\"");
  j = tiny_config();
  j["patch_size"] = {1, 2};
  EXPECT_EQ(config_error(j), "transformer/config.json: 'patch_size' must be a list of 3 positive integers (t, h, w), got [1,2]");
  j = tiny_config();
  j["image_dim"] = 1280;
  EXPECT_EQ(config_error(j), "transformer/config.json: 'image_dim' is 1280: image-to-video conditioning (I2V, CLIP image "
                             "embeddings) is not supported");
  j = tiny_config();
  j["added_kv_proj_dim"] = 5120;
  EXPECT_NE(config_error(j).find("'added_kv_proj_dim' is 5120: image-to-video"), std::string::npos);
  j = tiny_config();
  j["qk_norm"] = "rms_norm";
  EXPECT_NE(config_error(j).find("'qk_norm' must be \"rms_norm_across_heads\""), std::string::npos);
  j = tiny_config();
  j["_class_name"] = "HunyuanVideo15Transformer3DModel";
  EXPECT_EQ(config_error(j), "transformer/config.json: '_class_name' is \"HunyuanVideo15Transformer3DModel\"; dattn runs "
                             "WanTransformer3DModel checkpoints here");
  j = tiny_config();
  j["cross_attn_norm"] = 1;
  EXPECT_EQ(config_error(j), "transformer/config.json: 'cross_attn_norm' must be true or false, got 1");
  EXPECT_EQ(user_error([] { WanTransformerConfig::load("/nonexistent-dir"); }),
            "/nonexistent-dir/config.json: cannot open (is '/nonexistent-dir' a diffusers model directory?)");
}

TEST(WanManifest, MatchesTheGoldenCheckpointExactly) {
  const auto c = WanTransformerConfig::load(golden_dir() + "/wan_tiny/pipeline/transformer");
  WeightStore store(golden_dir() + "/wan_tiny/pipeline/transformer");
  const auto manifest = wan_transformer_manifest(c);
  ASSERT_EQ(manifest.size(), store.names().size());
  for (const auto& p : manifest) {
    ASSERT_TRUE(store.contains(p.name)) << p.name;
    EXPECT_EQ(store.info(p.name).shape, p.shape) << p.name;
  }
  // Without cross_attn_norm, norm2 has no parameters.
  WanTransformerConfig no_norm2 = c;
  no_norm2.cross_attn_norm = false;
  EXPECT_EQ(wan_transformer_manifest(no_norm2).size(), manifest.size() - 2 * 2);
}

TEST(WanManifest, RealModelSizes) {
  const auto count = [](const std::string& file) {
    std::ifstream in(golden_dir() + "/configs/" + file);
    std::uint64_t n = 0;
    for (const auto& p : wan_transformer_manifest(WanTransformerConfig::from_json(json::parse(in), file)))
      n += static_cast<std::uint64_t>(shape_numel(p.shape));
    return double(n);
  };
  // The published sizes: Wan2.1 1.3B and 14B, Wan2.2 TI2V 5B.
  const double b13 = count("wan2.1-t2v-1.3b.transformer.json"), b5 = count("wan2.2-ti2v-5b.transformer.json"),
               b14 = count("wan2.1-t2v-14b.transformer.json");
  std::printf("parameters: wan2.1-1.3b %.4g, wan2.2-ti2v-5b %.4g, wan2.1-14b %.4g\n", b13, b5, b14);
  EXPECT_NEAR(b13, 1.42e9, 0.05e9);
  EXPECT_NEAR(b5, 5.0e9, 0.1e9);
  EXPECT_NEAR(b14, 14.3e9, 0.2e9);
}

}  // namespace
}  // namespace dattn::testing
