// What the tokenizers refuse in tokenizer.json / tokenizer_config.json before any text is tokenized:
// nesting past the depth limit (30,000 nested Sequences crashed with SIGSEGV) and fields of the wrong type
// (each took its default in silence: add_prefix_space 0 was read as true).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "dattn/core/error.h"
#include "dattn/text/bpe_tokenizer.h"
#include "dattn/text/tokenizer.h"
#include "support/config_error.h"
#include "support/golden_dir.h"
#include "support/temp_folder.h"

using namespace dattn;
using nlohmann::json;

namespace {

json tiny() {
  return {{"added_tokens", json::array({{{"id", 4}, {"content", "<X>"}, {"lstrip", false}}})},
          {"normalizer", nullptr},
          {"pre_tokenizer", nullptr},
          {"post_processor", nullptr},
          {"model",
           {{"type", "BPE"}, {"vocab", {{"a", 0}, {"b", 1}, {"ab", 2}, {"?", 3}}}, {"merges", json::array({"a b"})}}}};
}

std::string refusal(const json& j, const json& cfg = json::object()) {
  return user_error([&] { BpeTokenizer::from_json(j.dump(), "t/tokenizer.json", cfg.dump(), "t/config.json"); });
}

// tiny() with its `kind` ("normalizer" or "pre_tokenizer") made of `levels` Sequences, each holding the
// next, around `leaf`; built as text, as nlohmann's own dump of such a tree would recurse as deep.
std::string nested(int levels, const std::string& kind = "normalizer", const std::string& list = "normalizers",
                   const std::string& leaf = R"({"type":"NFC"})") {
  json base = tiny();
  base.erase(kind);
  std::string s = base.dump();
  s.pop_back();  // the closing brace
  s += ",\"" + kind + "\":";
  for (int i = 0; i < levels; ++i) s += R"({"type":"Sequence",")" + list + "\":[";
  s += leaf;
  for (int i = 0; i < levels; ++i) s += "]}";
  return s + "}";
}

TEST(TokenizerJsonChecks, DeepNestingIsOneLineNamingTheFileAndTheLimit) {
  for (const auto& [kind, list, leaf] : {std::tuple{"normalizer", "normalizers", R"({"type":"NFC"})"},
                                         std::tuple{"pre_tokenizer", "pretokenizers", R"({"type":"ByteLevel"})"}}) {
    const std::string text = nested(30000, kind, list, leaf);
    const std::string msg = user_error([&] { BpeTokenizer::from_json(text, "t/tokenizer.json"); });
    EXPECT_EQ(msg,
              "t/tokenizer.json: nests deeper than 64 levels of objects and lists (a tokenizer file needs about 6)")
        << kind;
  }
  // From a folder the error names the file read; tokenizer_config.json is bounded too.
  dattn::testing::TempFolder dir;
  dir.write("tokenizer.json", nested(30000));
  std::string msg = user_error([&] { BpeTokenizer::load(dir.path()); });
  EXPECT_EQ(msg.find(dir.path() + "/tokenizer.json: nests deeper than 64 levels"), 0u) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  dir.write("tokenizer.json", tiny().dump());
  dir.write("tokenizer_config.json", "{\"extra\":" + std::string(30000, '[') + std::string(30000, ']') + "}");
  msg = user_error([&] { BpeTokenizer::load(dir.path()); });
  EXPECT_EQ(msg.find(dir.path() + "/tokenizer_config.json: nests deeper than 64 levels"), 0u) << msg;
}

TEST(TokenizerJsonChecks, T5ConfigNestingIsBoundedToo) {
  dattn::testing::TempFolder dir;
  std::filesystem::copy_file(dattn::testing::golden_dir() + "/wan_tiny/pipeline/tokenizer/spiece.model",
                             dir.path() + "/spiece.model");
  const std::string deep = std::string(30000, '[') + "\"<x>\"" + std::string(30000, ']');
  dir.write("tokenizer_config.json", "{\"additional_special_tokens\":" + deep + "}");
  const std::string msg = user_error([&] { T5Tokenizer::load(dir.path()); });
  EXPECT_EQ(msg.find(dir.path() + "/tokenizer_config.json: nests deeper than 64 levels"), 0u) << msg;
}

TEST(TokenizerJsonChecks, NestingWithinTheLimitIsRead) {
  // 30 Sequences are 61 levels of objects and lists with the file's own: still read, and still NFC.
  const BpeTokenizer tok = BpeTokenizer::from_json(nested(30), "t/tokenizer.json");
  EXPECT_EQ(tok.encode("ab"), (std::vector<int>{2}));
  EXPECT_NE(user_error([] { BpeTokenizer::from_json(nested(32), "t/tokenizer.json"); })
                .find("nests deeper than 64 levels"),
            std::string::npos);
}

TEST(TokenizerJsonChecks, FlagsOfTheWrongTypeAreNamed) {
  struct Case {
    json value;       // replaces the field at `pointer`
    std::string pointer, expected;
  };
  const json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  const json split = {{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "Isolated"}, {"invert", false}};
  const json sequence = {{"type", "Sequence"}, {"pretokenizers", {split, byte_level}}};
  const std::vector<Case> cases = {
      {0, "/pre_tokenizer/pretokenizers/1/add_prefix_space",
       "t/tokenizer.json: pre_tokenizer.pretokenizers[1].add_prefix_space is 0, of the wrong type; expected true or "
       "false"},
      {"yes", "/pre_tokenizer/pretokenizers/1/use_regex", "pre_tokenizer.pretokenizers[1].use_regex is \"yes\""},
      {nullptr, "/pre_tokenizer/pretokenizers/1/trim_offsets", "pre_tokenizer.pretokenizers[1].trim_offsets is null"},
      {1, "/pre_tokenizer/pretokenizers/0/invert", "pre_tokenizer.pretokenizers[0].invert is 1, of the wrong type"},
      {5, "/pre_tokenizer/pretokenizers/0/behavior", "pre_tokenizer.pretokenizers[0].behavior is 5, of the wrong "
                                                     "type; expected a string"},
      {5, "/pre_tokenizer/pretokenizers/0/type", "pre_tokenizer.pretokenizers[0].type is 5"},
      {json::array({"NFC"}), "/normalizer/type", "normalizer.type is [\"NFC\"], of the wrong type; expected a string"},
      {1, "/model/ignore_merges", "model.ignore_merges is 1, of the wrong type; expected true or false"},
      {"false", "/model/byte_fallback", "model.byte_fallback is \"false\", of the wrong type"},
      {0, "/model/fuse_unk", "model.fuse_unk is 0"},
      {5, "/model/unk_token", "model.unk_token is 5, of the wrong type; expected a string"},
      {"0", "/model/dropout", "model.dropout is \"0\", of the wrong type; expected a number"},
      {false, "/model/continuing_subword_prefix", "model.continuing_subword_prefix is false"},
      {json::array(), "/model/end_of_word_suffix", "model.end_of_word_suffix is []"},
      {5, "/model/type", "model.type is 5, of the wrong type; expected a string"},
      {"no", "/added_tokens/0/lstrip", "t/tokenizer.json: added_tokens[0].lstrip is \"no\", of the wrong type"},
      {0, "/added_tokens/0/rstrip", "added_tokens[0].rstrip is 0"},
      {1, "/added_tokens/0/normalized", "added_tokens[0].normalized is 1"},
      {"true", "/added_tokens/0/special", "added_tokens[0].special is \"true\""},
      {0, "/added_tokens/0/single_word", "added_tokens[0].single_word is 0"},
      {1, "/post_processor/trim_offsets", "post_processor.trim_offsets is 1"},
      {json::array(), "/padding", "t/tokenizer.json: padding is []; expected an object or null"},
      {"3", "/padding/pad_id", "padding.pad_id is \"3\", of the wrong type; expected a whole number"},
      {4294967299LL, "/padding/pad_id", "padding.pad_id is 4294967299; expected 0 to 2147483647"},
  };
  for (const Case& c : cases) {
    json j = tiny();
    j["pre_tokenizer"] = sequence;
    j["post_processor"] = {{"type", "ByteLevel"}, {"trim_offsets", false}};
    j["padding"] = {{"pad_id", 3}};
    j[json::json_pointer(c.pointer)] = c.value;
    const std::string msg = refusal(j);
    EXPECT_NE(msg.find(c.expected), std::string::npos) << c.pointer << ": " << msg;
  }
  // The same files with the flags typed are read.
  json j = tiny();
  j["pre_tokenizer"] = sequence;
  j["padding"] = {{"pad_id", 3}};
  EXPECT_EQ(BpeTokenizer::from_json(j.dump(), "t/tokenizer.json").pad_id(), 3);
}

TEST(TokenizerJsonChecks, ConfigFieldsOfTheWrongTypeAreNamed) {
  EXPECT_NE(refusal(tiny(), {{"model_max_length", "512"}})
                .find("t/config.json: model_max_length is \"512\", of the wrong type; expected a number"),
            std::string::npos);
  EXPECT_NE(refusal(tiny(), {{"model_max_length", 0}})
                .find("t/config.json: model_max_length is 0; expected a number >= 1"),
            std::string::npos);
  EXPECT_NE(refusal(tiny(), {{"pad_token", 3}}).find("t/config.json: field 'pad_token' must be a token string, got 3"),
            std::string::npos);
  // A huge model_max_length (transformers' VERY_LARGE_INTEGER) is a number and is kept at INT32_MAX.
  EXPECT_EQ(BpeTokenizer::from_json(tiny().dump(), "t", json{{"model_max_length", 1e30}}.dump()).model_max_length(),
            INT32_MAX);
}

}  // namespace
