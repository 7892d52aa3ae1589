// The umT5 text encoder against transformers' UMT5EncoderModel as the Wan pipeline runs it (golden
// wan_tiny: 2 layers, 4 heads x 8, d_model 32, float32), plus bucket values and config errors.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <gtest/gtest.h>

#include "dattn/attention/metrics.h"
#include "dattn/core/error.h"
#include "dattn/io/safetensors.h"
#include "dattn/models/umt5.h"
#include "dattn/pipeline/wan/prompt_embeds.h"
#include "dattn/text/tokenizer.h"
#include "models/umt5/position_bias.h"
#include "support/golden_dir.h"

namespace dattn::testing {
namespace {

namespace fs = std::filesystem;

std::string text_encoder_dir() { return golden_dir() + "/wan_tiny/pipeline/text_encoder"; }
std::string pipeline_case() { return golden_dir() + "/wan_tiny/cases/pipeline_t2v_fp32.safetensors"; }

std::vector<std::int64_t> read_i64(const SafetensorsFile& f, const std::string& name) {
  const auto v = f.read_f64(name);
  return {v.begin(), v.end()};
}

TokenizedBatch case_tokens(const SafetensorsFile& f) {
  TokenizedBatch t;
  t.batch = f.info("input.input_ids").shape[0];
  t.length = f.info("input.input_ids").shape[1];
  t.input_ids = read_i64(f, "input.input_ids");
  t.attention_mask = read_i64(f, "input.attention_mask");
  return t;
}

// Row b of [B, S, D] against a [1, S, D] reference; NaN/Inf are reported before any error measure.
ErrorStats compare_row(const Tensor& got, std::int64_t b, const SafetensorsFile& f, const std::string& name) {
  EXPECT_EQ(got.dim(1), f.info(name).shape[1]);
  EXPECT_EQ(got.dim(2), f.info(name).shape[2]);
  const auto all = got.to_f64_vector();
  const std::size_t row = static_cast<std::size_t>(got.dim(1) * got.dim(2));
  const auto ref = f.read_f64(name);
  return compare(all.data() + b * row, ref.data(), row);
}

TEST(Umt5Golden, PromptEmbedsMatchPipelineFloat32) {
  SafetensorsFile f(pipeline_case());
  const Umt5Encoder enc = Umt5Encoder::load(text_encoder_dir(), {Device::CPU, DType::F32});
  const TokenizedBatch tokens = case_tokens(f);  // [prompt, negative prompt]
  const Tensor embeds = encode_prompt(enc, tokens);
  ASSERT_EQ(embeds.shape(), (Shape{2, 512, 32}));
  ASSERT_EQ(embeds.dtype(), DType::F32);
  const char* names[] = {"text.prompt_embeds", "text.negative_prompt_embeds"};
  for (int b = 0; b < 2; ++b) {
    const ErrorStats s = compare_row(embeds, b, f, names[b]);
    std::printf("[umt5 fp32] %s (%lld tokens): %s\n", names[b], static_cast<long long>(tokens.valid_length(b)),
                describe(s).c_str());
    ASSERT_EQ(s.nonfinite, 0u) << names[b];
    EXPECT_LE(s.rel_l2, 1e-5) << names[b];
  }
  // Past each sequence's length the pipeline's embeddings are exactly zero.
  const auto v = embeds.to_f32_vector();
  for (int b = 0; b < 2; ++b)
    for (std::int64_t i = tokens.valid_length(b) * 32; i < 512 * 32; ++i)
      ASSERT_EQ(v[b * 512 * 32 + i], 0.0f) << "row " << b << " element " << i;
}

// A batch item's output does not depend on the others: each prompt alone gives the same rows (up to
// float32 rounding: the GEMM blocks differently for another row count).
TEST(Umt5Golden, BatchItemsAreIndependent) {
  SafetensorsFile f(pipeline_case());
  const Umt5Encoder enc = Umt5Encoder::load(text_encoder_dir());
  const TokenizedBatch both = case_tokens(f);
  const auto together = enc.encode(both.input_ids, both.attention_mask, 2, 512).to_f64_vector();
  for (int b = 0; b < 2; ++b) {
    const std::vector<std::int64_t> ids(both.input_ids.begin() + b * 512, both.input_ids.begin() + (b + 1) * 512);
    const std::vector<std::int64_t> mask(both.attention_mask.begin() + b * 512,
                                         both.attention_mask.begin() + (b + 1) * 512);
    const auto alone = enc.encode(ids, mask, 1, 512).to_f64_vector();
    const ErrorStats s = compare(alone.data(), together.data() + b * alone.size(), alone.size());
    ASSERT_EQ(s.nonfinite, 0u);
    EXPECT_LE(s.rel_l2, 1e-6) << "row " << b << ": " << describe(s);
  }
}

// Bucket values worked out by hand from the T5 rule for 32 buckets, max distance 128: 16 per
// direction (keys after the query get +16), distances 0..7 exact, then 8 + floor(8 log(d/8) / log 16).
TEST(Umt5Buckets, StandardConfiguration) {
  const std::int64_t S = 1200;
  const auto b = umt5::relative_buckets(1, S, 32, 128);       // query 0: relative position = j
  const auto back = umt5::relative_buckets(S, 1, 32, 128);    // key 0: relative position = -i
  const std::pair<std::int64_t, int> cases[] = {{0, 0}, {1, 1}, {7, 7}, {8, 8}, {15, 9}, {16, 10}, {31, 11},
                                                {32, 12}, {63, 13}, {64, 14}, {127, 15}, {128, 15}, {1199, 15}};
  for (const auto& [d, bucket] : cases) {
    EXPECT_EQ(back[d], bucket) << "relative position -" << d;
    if (d > 0) {
      EXPECT_EQ(b[d], 16 + bucket) << "relative position +" << d;
    }
  }
  EXPECT_EQ(b[0], 0);
}

TEST(Umt5Encode, RejectsBadInputs) {
  const Umt5Encoder enc = Umt5Encoder::load(text_encoder_dir());
  EXPECT_THROW(enc.encode({1, 2, 135}, {1, 1, 1}, 1, 3), UserError);  // vocab_size is 135
  EXPECT_THROW(enc.encode({1, 2, 3}, {1, 1}, 1, 3), UserError);
  EXPECT_THROW(Umt5Encoder::load(text_encoder_dir(), {Device::CPU, DType::F16}), UserError);
}

// ---- configuration errors

nlohmann::json golden_config() {
  std::ifstream in(text_encoder_dir() + "/config.json");
  return nlohmann::json::parse(in);
}

std::string error_of(const nlohmann::json& j) {
  try {
    Umt5Config::from_json(j, "text_encoder/config.json");
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Umt5Config, ReadsGoldenConfig) {
  const Umt5Config c = Umt5Config::load(text_encoder_dir());
  EXPECT_EQ(c.d_model, 32);
  EXPECT_EQ(c.d_kv, 8);
  EXPECT_EQ(c.d_ff, 64);
  EXPECT_EQ(c.num_layers, 2);
  EXPECT_EQ(c.num_heads, 4);
  EXPECT_EQ(c.num_buckets, 32);
  EXPECT_EQ(c.max_distance, 128);
  EXPECT_EQ(c.vocab_size, 135);
  EXPECT_DOUBLE_EQ(c.layer_norm_epsilon, 1e-6);
}

TEST(Umt5Config, BadConfigsNameTheField) {
  auto with = [](const std::string& key, const nlohmann::json& value) {
    nlohmann::json j = golden_config();
    if (value.is_discarded()) j.erase(key);
    else j[key] = value;
    return error_of(j);
  };
  const auto missing = nlohmann::json(nlohmann::json::value_t::discarded);
  EXPECT_NE(with("d_model", missing).find("'d_model' must be a positive integer (required)"), std::string::npos)
      << with("d_model", missing);
  EXPECT_NE(with("num_heads", 0).find("'num_heads'"), std::string::npos);
  EXPECT_NE(with("d_kv", "8").find("'d_kv'"), std::string::npos);
  EXPECT_NE(with("layer_norm_epsilon", -1).find("'layer_norm_epsilon'"), std::string::npos);
  EXPECT_NE(with("relative_attention_num_buckets", 7).find("even"), std::string::npos);
  // Unsupported model options are refused with the reason, not run wrongly.
  EXPECT_NE(with("feed_forward_proj", "relu").find("only gated"), std::string::npos) << with("feed_forward_proj", "relu");
  EXPECT_NE(with("feed_forward_proj", "gated-silu").find("tanh"), std::string::npos);
  EXPECT_NE(with("dense_act_fn", "gelu").find("'dense_act_fn'"), std::string::npos);
  EXPECT_NE(with("is_gated_act", false).find("'is_gated_act'"), std::string::npos);
  EXPECT_NE(with("model_type", "t5").find("only umT5"), std::string::npos);
  EXPECT_NE(with("is_decoder", true).find("'is_decoder'"), std::string::npos);
  EXPECT_EQ(error_of(golden_config()), "(no error)");
  EXPECT_THROW(Umt5Config::from_json(nlohmann::json::array(), "x"), UserError);
}

// A config that disagrees with the weights: too many layers (a tensor not found), too few (tensors
// left over), each named in the error.
TEST(Umt5Config, LayerCountMustMatchWeights) {
  const fs::path dir = fs::temp_directory_path() / ("dattn_umt5_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::copy_file(text_encoder_dir() + "/model.safetensors", dir / "model.safetensors",
                fs::copy_options::overwrite_existing);
  auto load_with_layers = [&](int n) -> std::string {
    nlohmann::json j = golden_config();
    j["num_layers"] = n;
    std::ofstream(dir / "config.json") << j.dump();
    try {
      Umt5Encoder::load(dir.string());
    } catch (const UserError& e) {
      return e.what();
    }
    return "(no error)";
  };
  const std::string more = load_with_layers(3), fewer = load_with_layers(1);
  fs::remove_all(dir);
  EXPECT_NE(more.find("encoder.block.2.layer.0.layer_norm.weight"), std::string::npos) << more;
  EXPECT_NE(fewer.find("encoder.block.1."), std::string::npos) << fewer;
}

}  // namespace
}  // namespace dattn::testing
