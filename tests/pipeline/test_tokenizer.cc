// T5Tokenizer against transformers' T5TokenizerFast: cases/tokenizer (7 raw prompts: plain, messy
// whitespace with an HTML entity, non-Latin characters, empty, and one truncated at 512) and the
// pipeline case's [prompt, negative prompt] ids, which the pipeline cleans first.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "dattn/core/error.h"
#include "dattn/io/safetensors.h"
#include "dattn/text/prompt_clean.h"
#include "dattn/text/tokenizer.h"
#include "support/golden_dir.h"

using namespace dattn;

namespace {

std::string wan_dir() { return dattn::testing::golden_dir() + "/wan_tiny"; }

T5Tokenizer load_tiny() { return T5Tokenizer::load(wan_dir() + "/pipeline/tokenizer"); }

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  return nlohmann::json::parse(in);
}

std::vector<std::int64_t> as_i64(const std::vector<double>& v) { return std::vector<std::int64_t>(v.begin(), v.end()); }

// Compares row by row so that a failure names the prompt and the first differing position.
void expect_batch(const TokenizedBatch& got, const SafetensorsFile& golden, const std::string& ids_name,
                  const std::string& mask_name, const std::vector<std::string>& texts) {
  const std::vector<std::int64_t> ids = as_i64(golden.read_f64(ids_name));
  const std::vector<std::int64_t> mask = as_i64(golden.read_f64(mask_name));
  ASSERT_EQ(golden.info(ids_name).shape, (std::vector<std::int64_t>{got.batch, got.length}));
  for (std::int64_t b = 0; b < got.batch; ++b)
    for (std::int64_t i = 0; i < got.length; ++i) {
      const std::size_t k = static_cast<std::size_t>(b * got.length + i);
      if (got.input_ids[k] != ids[k] || got.attention_mask[k] != mask[k]) {
        ADD_FAILURE() << "prompt " << b << " (\"" << texts[b].substr(0, 60) << "\") differs at position " << i
                      << ": id " << got.input_ids[k] << " vs " << ids[k] << ", mask " << got.attention_mask[k]
                      << " vs " << mask[k];
        break;
      }
    }
}

TEST(Tokenizer, ReadsTheTokenizerConfig) {
  const T5Tokenizer tok = load_tiny();
  EXPECT_EQ(tok.eos_id(), 1);
  EXPECT_EQ(tok.pad_id(), 0);
  EXPECT_EQ(tok.unk_id(), 2);
  EXPECT_EQ(tok.model_max_length(), 512);
  EXPECT_EQ(tok.vocab_size(), 135);
}

TEST(Tokenizer, MatchesTransformersOnTheGoldenPrompts) {
  const T5Tokenizer tok = load_tiny();
  const nlohmann::json meta = read_json(wan_dir() + "/cases/tokenizer.json");
  const std::vector<std::string> prompts = meta["prompts"].get<std::vector<std::string>>();
  ASSERT_EQ(prompts.size(), 7u);
  SafetensorsFile golden(wan_dir() + "/cases/tokenizer.safetensors");
  // The case tokenizes the raw prompts (no cleaning), at transformers' max_length 512.
  const TokenizedBatch got = tok.encode(prompts, 512);
  expect_batch(got, golden, "input_ids", "attention_mask", prompts);
  EXPECT_EQ(got.valid_length(5), 1);    // "" is the end-of-sequence token alone
  EXPECT_EQ(got.valid_length(6), 512);  // truncated: 511 pieces and the end-of-sequence token
  EXPECT_EQ(got.input_ids[6 * 512 + 511], tok.eos_id());
}

TEST(Tokenizer, MatchesThePipelineCaseAfterCleaning) {
  const T5Tokenizer tok = load_tiny();
  const nlohmann::json meta = read_json(wan_dir() + "/cases/pipeline_t2v_fp32.json");
  const std::vector<std::string> texts = {clean_prompt(meta["prompt"].get<std::string>()),
                                          clean_prompt(meta["negative_prompt"].get<std::string>())};
  SafetensorsFile golden(wan_dir() + "/cases/pipeline_t2v_fp32.safetensors");
  expect_batch(tok.encode(texts, meta["max_sequence_length"].get<int>()), golden, "input.input_ids",
               "input.attention_mask", texts);
}

TEST(Tokenizer, HuggingFaceDifferencesFromPlainSentencepiece) {
  const T5Tokenizer tok = load_tiny();
  // Special-token text is the token itself, and the text around it is encoded as separate words.
  std::vector<int> want = tok.encode_pieces("a dog");
  want.push_back(tok.eos_id());
  for (int id : tok.encode_pieces("cat")) want.push_back(id);
  EXPECT_EQ(tok.encode_pieces("a dog</s>cat"), want);
  // U+0085 splits words like a space; U+000B is removed by the normalization and joins them.
  EXPECT_EQ(tok.encode_pieces("dog\u0085cat"), tok.encode_pieces("dog cat"));
  EXPECT_EQ(tok.encode_pieces("dog\x0b" "cat"), tok.encode_pieces("dogcat"));
  EXPECT_TRUE(tok.encode_pieces("").empty());
}

TEST(Tokenizer, Errors) {
  EXPECT_THROW(T5Tokenizer::load("/nonexistent/tokenizer"), UserError);
  const T5Tokenizer tok = load_tiny();
  EXPECT_THROW(tok.encode({"a"}, 0), UserError);
  EXPECT_THROW(tok.encode_pieces("bad \xff"), UserError);
  // max_length 1 leaves room for the end-of-sequence token only.
  const TokenizedBatch one = tok.encode({"a dog"}, 1);
  EXPECT_EQ(one.input_ids, (std::vector<std::int64_t>{tok.eos_id()}));
}

}  // namespace
