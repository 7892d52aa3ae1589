// HunyuanVideo-1.5's two tokenizers against transformers on the hv15_tiny tokenizer case: the chat
// template ids [10, 1182] (Qwen2 byte-level BPE), the template prefix and crop index, and the ByT5 ids
// [10, 256] of each prompt's glyph text (all-zero rows where it quotes nothing).
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "dattn/io/safetensors.h"
#include "dattn/text/bpe_tokenizer.h"
#include "dattn/text/byt5_tokenizer.h"
#include "dattn/text/chat_template.h"
#include "dattn/text/hv15_prompt.h"
#include "golden_case.h"

using namespace dattn;
using namespace dattn::testing;

namespace {

std::vector<std::string> case_prompts(const nlohmann::json& meta) {
  std::vector<std::string> out;
  for (const auto& p : meta["prompts"]) out.push_back(p["prompt"].get<std::string>());
  return out;
}

TEST(Hv15Golden, SystemMessageIsThePipelines) {
  EXPECT_EQ(hv15::default_system_message(), hv15_tokenizer_case()["system_message"].get<std::string>());
}

TEST(Hv15Golden, ChatTemplateRendersAsTransformers) {
  const nlohmann::json meta = hv15_tokenizer_case();
  const ChatTemplate tpl = ChatTemplate::load(hv15_tokenizer_dir());
  EXPECT_STREQ(tpl.name(), "Qwen2.5-VL");
  const std::string sys = meta["system_message"].get<std::string>();
  EXPECT_EQ(tpl.user_content_prefix(sys), meta["template_prefix"].get<std::string>());
  for (const auto& p : meta["prompts"]) {
    const auto messages = hv15::prompt_messages(p["prompt"].get<std::string>(), sys);
    EXPECT_EQ(messages[1].content, p["qwen_user_content"].get<std::string>());
    EXPECT_EQ(tpl.render(messages, true), p["chat_template_rendered"].get<std::string>()) << "prompt " << p["index"];
  }
}

TEST(Hv15Golden, CropIndexIsCountedWithTheTokenizer) {
  const nlohmann::json meta = hv15_tokenizer_case();
  const BpeTokenizer tok = BpeTokenizer::load(hv15_tokenizer_dir());
  const ChatTemplate tpl = ChatTemplate::load(hv15_tokenizer_dir());
  const std::string sys = meta["system_message"].get<std::string>();
  EXPECT_EQ(hv15::crop_index(tok, tpl, sys), 182);
  EXPECT_EQ(hv15::crop_index(tok, tpl, sys), meta["prompt_template_encode_start_idx"].get<std::int64_t>());
  SafetensorsFile golden(hv15_dir() + "/cases/tokenizer.safetensors");
  const std::vector<int> got = hv15::template_prefix_ids(tok, tpl, sys);
  EXPECT_EQ(std::vector<std::int64_t>(got.begin(), got.end()), golden_i64(golden, "qwen.template_prefix_ids"));
}

TEST(Hv15Golden, QwenIdsAndMaskMatchForEveryPrompt) {
  const nlohmann::json meta = hv15_tokenizer_case();
  const BpeTokenizer tok = BpeTokenizer::load(hv15_tokenizer_dir());
  const ChatTemplate tpl = ChatTemplate::load(hv15_tokenizer_dir());
  EXPECT_EQ(tok.pad_id(), meta["pad_token_id"].get<int>());
  EXPECT_EQ(tok.eos_id(), tok.token_id("<|im_end|>"));
  const std::string sys = meta["system_message"].get<std::string>();
  const std::vector<std::string> prompts = case_prompts(meta);
  ASSERT_EQ(prompts.size(), 10u);
  const std::int64_t crop = hv15::crop_index(tok, tpl, sys);
  const TokenizedBatch got = hv15::qwen_inputs(tok, tpl, prompts, sys, crop, meta["tokenizer_max_length"].get<int>());
  ASSERT_EQ(got.batch, 10);
  ASSERT_EQ(got.length, 1182);
  SafetensorsFile golden(hv15_dir() + "/cases/tokenizer.safetensors");
  ASSERT_EQ(golden.info("qwen.input_ids").shape, (std::vector<std::int64_t>{10, 1182}));
  const auto ids = golden_i64(golden, "qwen.input_ids"), mask = golden_i64(golden, "qwen.attention_mask");
  for (std::int64_t b = 0; b < 10; ++b) {
    expect_row(got, b, ids, mask, b, "qwen");
    EXPECT_EQ(got.valid_length(b), meta["prompts"][b]["qwen_valid_tokens"].get<std::int64_t>()) << "prompt " << b;
  }
  // The long prompt is cut at 1182, its assistant suffix with it; the untruncated count is the case's too.
  EXPECT_EQ(tok.encode(tpl.render(hv15::prompt_messages(prompts[6], sys), true)).size(),
            meta["prompts"][6]["qwen_untruncated_tokens"].get<std::size_t>());
  // A literal <|im_end|> in the prompt is the special token, as transformers matches it.
  const std::vector<int> user = tok.encode(prompts[9]);
  EXPECT_NE(std::find(user.begin(), user.end(), *tok.token_id("<|im_end|>")), user.end());
}

TEST(Hv15Golden, GlyphTextsAreThePipelines) {
  const nlohmann::json meta = hv15_tokenizer_case();
  for (const auto& p : meta["prompts"]) {
    const auto got = hv15::extract_glyph_text(p["prompt"].get<std::string>());
    if (p["glyph_text"].is_null()) {
      EXPECT_FALSE(got.has_value()) << "prompt " << p["index"] << " got " << got.value_or("");
    } else {
      ASSERT_TRUE(got.has_value()) << "prompt " << p["index"];
      EXPECT_EQ(*got, p["glyph_text"].get<std::string>()) << "prompt " << p["index"];
    }
  }
}

TEST(Hv15Golden, ByT5IdsAndMaskMatchForEveryPrompt) {
  const nlohmann::json meta = hv15_tokenizer_case();
  const ByT5Tokenizer tok = ByT5Tokenizer::load(hv15_tokenizer_2_dir());
  EXPECT_EQ(tok.pad_id(), 0);
  EXPECT_EQ(tok.eos_id(), 1);
  EXPECT_EQ(tok.unk_id(), 2);
  EXPECT_EQ(tok.added_token_count(), 3u + 125u + 10u);
  SafetensorsFile golden(hv15_dir() + "/cases/tokenizer.safetensors");
  ASSERT_EQ(golden.info("byt5.input_ids").shape, (std::vector<std::int64_t>{10, 256}));
  const auto ids = golden_i64(golden, "byt5.input_ids"), mask = golden_i64(golden, "byt5.attention_mask");
  const std::vector<std::string> prompts = case_prompts(meta);
  for (std::int64_t b = 0; b < 10; ++b) {
    const std::optional<TokenizedBatch> got =
        hv15::byt5_inputs(tok, prompts[b], meta["tokenizer_2_max_length"].get<int>());
    // No glyph text: the pipeline's row is zero ids and an all-zero mask.
    const TokenizedBatch row =
        got.value_or(TokenizedBatch{1, 256, std::vector<std::int64_t>(256, 0), std::vector<std::int64_t>(256, 0)});
    EXPECT_EQ(got.has_value(), !meta["prompts"][b]["glyph_text"].is_null()) << "prompt " << b;
    expect_row(row, 0, ids, mask, b, "byt5");
    EXPECT_EQ(row.valid_length(0), meta["prompts"][b]["byt5_valid_tokens"].get<std::int64_t>()) << "prompt " << b;
  }
}

}  // namespace
