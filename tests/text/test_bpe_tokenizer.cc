// BpeTokenizer on hand-made tokenizer.json files (merges by rank, added tokens, refused settings) and on
// the hv15_tiny Qwen2 tokenizer (NFC, byte-level spelling, special tokens in words).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "dattn/core/error.h"
#include "dattn/text/bpe_tokenizer.h"
#include "golden_case.h"
#include "support/config_error.h"
#include "support/temp_folder.h"
#include "text/byte_level.h"

using namespace dattn;
using nlohmann::json;

namespace {

// A tokenizer.json with no normalizer and no pre-tokenizer: the whole text is one piece of code points.
json tiny(const json& merges, const json& added = json::array()) {
  return {{"version", "1.0"},
          {"added_tokens", added},
          {"normalizer", nullptr},
          {"pre_tokenizer", nullptr},
          {"post_processor", nullptr},
          {"model",
           {{"type", "BPE"},
            {"vocab", {{"a", 0}, {"b", 1}, {"c", 2}, {"d", 3}, {" ", 4}, {"ab", 5}, {"bc", 6}, {"abc", 7}, {"aa", 8}}},
            {"merges", merges}}}};
}

BpeTokenizer make(const json& j, const json& cfg = json::object()) {
  return BpeTokenizer::from_json(j.dump(), "test/tokenizer.json", cfg.dump());
}

json added(const std::string& content, int id, bool lstrip = false, bool rstrip = false, bool normalized = false) {
  return {{"id", id},         {"content", content},       {"single_word", false}, {"lstrip", lstrip},
          {"rstrip", rstrip}, {"normalized", normalized}, {"special", true}};
}

BpeTokenizer qwen() { return BpeTokenizer::load(dattn::testing::hv15_tokenizer_dir()); }

TEST(BpeTokenizer, MergesApplyByRankNotByPosition) {
  // "abc": with (b,c) ranked first the result is a + bc; with (a,b) first it is ab + c.
  EXPECT_EQ(make(tiny(json::array({json::array({"b", "c"}), json::array({"a", "b"})}))).encode("abc"),
            (std::vector<int>{0, 6}));
  EXPECT_EQ(make(tiny(json::array({json::array({"a", "b"}), json::array({"b", "c"})}))).encode("abc"),
            (std::vector<int>{5, 2}));
  // A merge whose parts are earlier merges' results: (a,b) then (ab,c) gives abc.
  EXPECT_EQ(make(tiny(json::array({json::array({"a", "b"}), json::array({"ab", "c"})}))).encode("abc"),
            (std::vector<int>{7}));
  // Equal pairs merge leftmost first: aaa -> aa + a. The old "a b" string form of a merge is read too.
  EXPECT_EQ(make(tiny(json::array({"a a"}))).encode("aaa"), (std::vector<int>{8, 0}));
  EXPECT_EQ(make(tiny(json::array())).encode("abc"), (std::vector<int>{0, 1, 2}));
}

TEST(BpeTokenizer, AddedTokenInTheMiddleOfAWord) {
  const BpeTokenizer tok = make(tiny(json::array({json::array({"b", "c"})}), json::array({added("<X>", 9)})));
  // "b<X>c": the token splits the word, so b and c are not merged across it.
  EXPECT_EQ(tok.encode("ab<X>cd"), (std::vector<int>{0, 1, 9, 2, 3}));
  EXPECT_EQ(tok.encode("abcd"), (std::vector<int>{0, 6, 3}));
  EXPECT_EQ(tok.token_id("<X>"), 9);
  // On the Qwen2 tokenizer: the pieces either side are tokenized on their own.
  const BpeTokenizer q = qwen();
  std::vector<int> want = q.encode("cat");
  want.push_back(*q.token_id("<|im_end|>"));
  for (int id : q.encode("dog")) want.push_back(id);
  EXPECT_EQ(q.encode("cat<|im_end|>dog"), want);
}

TEST(BpeTokenizer, AddedTokenStripFlagsTakeTheWhitespace) {
  const json tokens = json::array({added("<L>", 9, true, false), added("<R>", 10, false, true)});
  const BpeTokenizer tok = make(tiny(json::array(), tokens));
  EXPECT_EQ(tok.encode("a  <L> b"), (std::vector<int>{0, 9, 4, 1}));   // lstrip eats the spaces before
  EXPECT_EQ(tok.encode("a <R>  b"), (std::vector<int>{0, 4, 10, 1}));  // rstrip eats the spaces after
  // Longest match wins where two start at one place.
  const BpeTokenizer two = make(tiny(json::array(), json::array({added("<A", 9), added("<AB>", 10)})));
  EXPECT_EQ(two.encode("a<AB>"), (std::vector<int>{0, 10}));
}

TEST(BpeTokenizer, NormalizedAddedTokenIsMatchedAfterNfc) {
  json j = tiny(json::array(), json::array({added("\u00e9", 9, false, false, true)}));
  j["normalizer"] = {{"type", "NFC"}};
  EXPECT_EQ(make(j).encode("ae\u0301"), (std::vector<int>{0, 9}));  // e + combining acute is é after NFC
}

TEST(BpeTokenizer, QwenNfcAndByteLevel) {
  const BpeTokenizer q = qwen();
  EXPECT_EQ(q.encode("cafe\u0301 caf\u00e9"), q.encode("caf\u00e9 caf\u00e9"));
  // The byte-level alphabet: a space is U+0120, a newline U+010A, printable ASCII itself.
  EXPECT_EQ(dattn::text_detail::byte_to_unicode(' '), U'\u0120');
  EXPECT_EQ(dattn::text_detail::byte_to_unicode('\n'), U'\u010a');
  EXPECT_EQ(dattn::text_detail::byte_to_unicode('A'), U'A');
  EXPECT_EQ(dattn::text_detail::byte_to_unicode(0xAD), U'\u0143');
  EXPECT_EQ(q.encode(" "), (std::vector<int>{*q.token_id("\u0120")}));
  EXPECT_EQ(q.encode("\n"), (std::vector<int>{*q.token_id("\u010a")}));
  EXPECT_TRUE(q.encode("").empty());
}

// GPT-2's form: a ByteLevel pre-tokenizer with its own regex, over a vocabulary of the 256 byte symbols
// (id = byte) and one merge, Ġ + w.
json gpt2_style(bool add_prefix_space) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) {
    std::string sym;
    const char32_t c = dattn::text_detail::byte_to_unicode(static_cast<unsigned char>(b));
    if (c < 0x80) {
      sym.push_back(static_cast<char>(c));
    } else {
      sym.push_back(static_cast<char>(0xC0 | (c >> 6)));
      sym.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
    vocab[sym] = b;
  }
  vocab["\u0120w"] = 256;
  return {{"normalizer", nullptr},
          {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", add_prefix_space}, {"use_regex", true}}},
          {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array({json::array({"\u0120", "w"})})}}}};
}

TEST(BpeTokenizer, ByteLevelWithItsOwnRegex) {
  const BpeTokenizer tok = make(gpt2_style(false));
  EXPECT_EQ(tok.encode("a w"), (std::vector<int>{'a', 256}));
  // Two spaces: the first is a piece of its own (\s+(?!\S)), the second starts " w".
  EXPECT_EQ(tok.encode("a  w"), (std::vector<int>{'a', ' ', 256}));
  EXPECT_EQ(tok.encode("w"), (std::vector<int>{'w'}));
  EXPECT_EQ(make(gpt2_style(true)).encode("w"), (std::vector<int>{256}));  // the prefix space
  EXPECT_EQ(tok.encode("\xc3\xa9"), (std::vector<int>{0xC3, 0xA9}));       // é is two byte symbols
}

TEST(BpeTokenizer, SplitOnAString) {
  // A {"String": ...} pattern is matched literally ("." is a dot); PCRE2 refused it with the UCP option.
  json j = tiny(json::array({json::array({"a", "b"})}));
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"String", "c"}}}, {"behavior", "Removed"}};
  EXPECT_EQ(make(j).encode("acbcab"), (std::vector<int>{0, 1, 5}));
  j["pre_tokenizer"]["behavior"] = "Isolated";
  EXPECT_EQ(make(j).encode("acab"), (std::vector<int>{0, 2, 5}));
}

TEST(BpeTokenizer, PaddingAndTruncationOnTheRight) {
  const BpeTokenizer q = qwen();
  const std::vector<int> ids = q.encode("A cat walks on the grass");
  ASSERT_GT(ids.size(), 3u);
  const TokenizedBatch b = q.encode_batch({"A cat walks on the grass", ""}, 3);
  EXPECT_EQ(b.input_ids, (std::vector<std::int64_t>{ids[0], ids[1], ids[2], 512, 512, 512}));
  EXPECT_EQ(b.attention_mask, (std::vector<std::int64_t>{1, 1, 1, 0, 0, 0}));
  const TokenizedBatch wide = q.encode_batch({"A cat walks on the grass"}, static_cast<int>(ids.size()) + 2);
  EXPECT_EQ(wide.valid_length(0), static_cast<std::int64_t>(ids.size()));
  EXPECT_EQ(wide.input_ids.back(), q.pad_id());
  EXPECT_EQ(q.model_max_length(), 131072);
}

TEST(BpeTokenizer, NonUtf8InputIsRefused) {
  const std::string msg = user_error([] { qwen().encode("bad \xff text"); });
  EXPECT_NE(msg.find("not valid UTF-8 at byte 4"), std::string::npos) << msg;
  EXPECT_NE(user_error([] { qwen().encode("\xc3"); }).find("not valid UTF-8"), std::string::npos);
}

TEST(BpeTokenizer, UnimplementedSettingsAreRefusedByName) {
  json j = tiny(json::array());
  j["normalizer"] = {{"type", "Lowercase"}};
  std::string msg = user_error([&] { make(j); });
  EXPECT_NE(msg.find("test/tokenizer.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("\"Lowercase\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("implemented: null, NFC"), std::string::npos) << msg;

  j = tiny(json::array());
  j["pre_tokenizer"] = {{"type", "Metaspace"}};
  msg = user_error([&] { make(j); });
  EXPECT_NE(msg.find("\"Metaspace\""), std::string::npos) << msg;

  j = tiny(json::array());
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
  msg = user_error([&] { make(j); });
  EXPECT_NE(msg.find("(unclosed"), std::string::npos) << msg;

  j = tiny(json::array());
  j["post_processor"] = {{"type", "TemplateProcessing"}};
  EXPECT_NE(user_error([&] { make(j); }).find("TemplateProcessing"), std::string::npos);

  j = tiny(json::array({json::array({"a", "z"})}));
  EXPECT_NE(user_error([&] { make(j); }).find("model.merges[0]"), std::string::npos);

  j = tiny(json::array(), json::array({added("<X>", 9)}));
  j["added_tokens"][0]["lstrip"] = "yes";
  EXPECT_NE(user_error([&] { make(j); }).find("wrong type"), std::string::npos);

  // An id outside int was narrowed (2^32 + 1 became 1) and a negative one taken.
  for (const json& id : {json(4294967297LL), json(-5)}) {
    j = tiny(json::array(), json::array({added("<X>", 9)}));
    j["added_tokens"][0]["id"] = id;
    msg = user_error([&] { make(j); });
    EXPECT_NE(msg.find("has id " + id.dump() + "; expected 0 to 2147483647"), std::string::npos) << msg;
  }

  j = tiny(json::array());
  j["model"]["type"] = "WordPiece";
  EXPECT_NE(user_error([&] { make(j); }).find("WordPiece"), std::string::npos);
}

TEST(BpeTokenizer, PadTokenAndFiles) {
  const BpeTokenizer no_pad = make(tiny(json::array()));
  EXPECT_NE(user_error([&] { no_pad.pad_id(); }).find("pad_token"), std::string::npos);
  EXPECT_EQ(make(tiny(json::array()), {{"pad_token", "d"}, {"eos_token", "c"}}).pad_id(), 3);
  EXPECT_NE(user_error([] { make(tiny(json::array()), {{"pad_token", "<nope>"}}); }).find("<nope>"), std::string::npos);
  // A character outside the vocabulary, with no unk token, is named.
  EXPECT_NE(user_error([] { make(tiny(json::array())).encode("az"); }).find("\"z\""), std::string::npos);

  dattn::testing::TempFolder dir;
  EXPECT_NE(user_error([&] { BpeTokenizer::load(dir.path()); }).find("tokenizer.json: missing"), std::string::npos);
  dir.write("tokenizer.json", tiny(json::array()).dump());
  dir.write("tokenizer_config.json", json{{"pad_token", "a"}}.dump());
  EXPECT_EQ(BpeTokenizer::load(dir.path()).pad_id(), 0);
  dir.write("tokenizer_config.json", "{not json");
  EXPECT_NE(user_error([&] { BpeTokenizer::load(dir.path()); }).find("not valid JSON"), std::string::npos);
}

}  // namespace
