// ByT5Tokenizer on the hv15_tiny tokenizer_2 folder and on hand-written configs.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "dattn/core/error.h"
#include "dattn/text/byt5_tokenizer.h"
#include "golden_case.h"
#include "support/config_error.h"
#include "support/temp_folder.h"

using namespace dattn;
using nlohmann::json;

namespace {

ByT5Tokenizer tiny() { return ByT5Tokenizer::load(dattn::testing::hv15_tokenizer_2_dir()); }

TEST(ByT5Tokenizer, BytesAreOffsetByThree) {
  const ByT5Tokenizer tok = tiny();
  EXPECT_EQ(tok.byte_offset(), 3);
  EXPECT_EQ(tok.encode_pieces("Ab"), (std::vector<int>{'A' + 3, 'b' + 3}));
  EXPECT_EQ(tok.encode_pieces("\u00e9"), (std::vector<int>{0xC3 + 3, 0xA9 + 3}));  // one id per UTF-8 byte
}

TEST(ByT5Tokenizer, AddedTokensFromTheConfigFiles) {
  const ByT5Tokenizer tok = tiny();
  // From tokenizer_config.json's added_tokens_decoder and added_tokens.json, inside a word too.
  EXPECT_EQ(tok.encode_pieces("x<color-1>y<extra_id_0>"), (std::vector<int>{'x' + 3, 385, 'y' + 3, 259}));
  EXPECT_EQ(tok.encode_pieces("<cn-font-1>"), (std::vector<int>{393}));
  // <color-1> keeps its neighbours' spaces; </s> (lstrip and rstrip in the config) takes them.
  EXPECT_EQ(tok.encode_pieces("a <color-1> b"), (std::vector<int>{'a' + 3, ' ' + 3, 385, ' ' + 3, 'b' + 3}));
  EXPECT_EQ(tok.encode_pieces("a  </s>\t b"), (std::vector<int>{'a' + 3, 1, 'b' + 3}));
  EXPECT_EQ(tok.encode_pieces("<pad><unk>"), (std::vector<int>{0, 2}));
}

TEST(ByT5Tokenizer, TruncationEosAndPadding) {
  const ByT5Tokenizer tok = tiny();
  const TokenizedBatch b = tok.encode({"abcdef", "a"}, 4);
  EXPECT_EQ(b.input_ids, (std::vector<std::int64_t>{'a' + 3, 'b' + 3, 'c' + 3, 1, 'a' + 3, 1, 0, 0}));
  EXPECT_EQ(b.attention_mask, (std::vector<std::int64_t>{1, 1, 1, 1, 1, 1, 0, 0}));
  EXPECT_EQ(tok.encode({""}, 1).input_ids, (std::vector<std::int64_t>{1}));
  EXPECT_THROW(tok.encode({"a"}, 0), UserError);
}

TEST(ByT5Tokenizer, NonUtf8InputIsRefused) {
  const std::string msg = user_error([] { tiny().encode_pieces("ok\xfe"); });
  EXPECT_NE(msg.find("not valid UTF-8 at byte 2"), std::string::npos) << msg;
}

TEST(ByT5Tokenizer, BadConfigsAreRefused) {
  dattn::testing::TempFolder dir;
  EXPECT_NE(user_error([&] { ByT5Tokenizer::load(dir.path()); }).find("tokenizer_config.json: missing"),
            std::string::npos);
  auto decoder = [](int pad, int eos, int unk) {
    return json{{"added_tokens_decoder",
                 {{std::to_string(pad), {{"content", "<pad>"}}},
                  {std::to_string(eos), {{"content", "</s>"}}},
                  {std::to_string(unk), {{"content", "<unk>"}}}}}};
  };
  dir.write("tokenizer_config.json", decoder(0, 1, 2).dump());
  EXPECT_EQ(ByT5Tokenizer::load(dir.path()).added_token_count(), 3u);
  dir.write("tokenizer_config.json", decoder(0, 1, 5).dump());
  EXPECT_NE(user_error([&] { ByT5Tokenizer::load(dir.path()); }).find("ids 0, 1 and 2"), std::string::npos);
  json cfg = decoder(0, 1, 2);
  cfg["eos_token"] = "<eos>";
  dir.write("tokenizer_config.json", cfg.dump());
  EXPECT_NE(user_error([&] { ByT5Tokenizer::load(dir.path()); }).find("\"<eos>\""), std::string::npos);
  cfg = decoder(0, 1, 2);
  cfg["extra_ids"] = 2;
  dir.write("tokenizer_config.json", cfg.dump());
  EXPECT_NE(user_error([&] { ByT5Tokenizer::load(dir.path()); }).find("<extra_id_0>"), std::string::npos);
  dir.write("tokenizer_config.json", decoder(0, 1, 2).dump());
  cfg = decoder(0, 1, 2);
  cfg["added_tokens_decoder"]["0"]["lstrip"] = "yes";
  dir.write("tokenizer_config.json", cfg.dump());
  EXPECT_NE(user_error([&] { ByT5Tokenizer::load(dir.path()); }).find("wrong type"), std::string::npos);
  dir.write("tokenizer_config.json", decoder(0, 1, 2).dump());
  dir.write("added_tokens.json", json{{"</s>", 7}}.dump());
  EXPECT_NE(user_error([&] { ByT5Tokenizer::load(dir.path()); }).find("added_tokens.json"), std::string::npos);
}

json byt5_config() {
  return {{"added_tokens_decoder",
           {{"0", {{"content", "<pad>"}}}, {"1", {{"content", "</s>"}}}, {"2", {{"content", "<unk>"}}}}}};
}

TEST(ByT5Tokenizer, IdsOutsideIntAreRefusedNamingTheToken) {
  dattn::testing::TempFolder dir;
  dir.write("tokenizer_config.json", byt5_config().dump());
  // added_tokens.json: 4294967680 was read as 384 and 2^31 as a negative id.
  for (const char* id : {"4294967680", "2147483648", "-1", "18446744073709551616", "3.5"}) {
    dir.write("added_tokens.json", std::string("{\"<color-9>\": ") + id + "}");
    const std::string msg = user_error([&] { ByT5Tokenizer::load(dir.path()); });
    EXPECT_NE(msg.find("added_tokens.json: token \"<color-9>\" has id "), std::string::npos) << msg;
    EXPECT_NE(msg.find("; expected a whole number from 0 to 2147483647"), std::string::npos) << msg;
  }
  dir.write("added_tokens.json", R"({"<color-9>": 2147483647})");
  EXPECT_EQ(ByT5Tokenizer::load(dir.path()).encode_pieces("<color-9>"), (std::vector<int>{2147483647}));
  std::remove((dir.path() + "/added_tokens.json").c_str());
  // added_tokens_decoder's keys: decimal digits up to 2^31 - 1.
  for (const char* key : {"4294967680", "2147483648", "-1", "+5", " 5", "0x10"}) {
    json cfg = byt5_config();
    cfg["added_tokens_decoder"][key] = {{"content", "<color-9>"}};
    dir.write("tokenizer_config.json", cfg.dump());
    const std::string msg = user_error([&] { ByT5Tokenizer::load(dir.path()); });
    EXPECT_NE(msg.find(std::string("added_tokens_decoder gives token \"<color-9>\" the id \"") + key +
                       "\"; expected a whole number from 0 to 2147483647"),
              std::string::npos)
        << msg;
  }
}

TEST(ByT5Tokenizer, FieldsOfTheWrongTypeAreNamed) {
  dattn::testing::TempFolder dir;
  json cfg = byt5_config();
  cfg["added_tokens_decoder"]["1"]["rstrip"] = 1;
  dir.write("tokenizer_config.json", cfg.dump());
  EXPECT_NE(user_error([&] { ByT5Tokenizer::load(dir.path()); })
                .find("added_tokens_decoder[\"1\"].rstrip is 1, of the wrong type; expected true or false"),
            std::string::npos);
  cfg = byt5_config();
  cfg["extra_ids"] = "2";  // was passed over: no sentinel was checked
  dir.write("tokenizer_config.json", cfg.dump());
  EXPECT_NE(user_error([&] { ByT5Tokenizer::load(dir.path()); })
                .find("tokenizer_config.json: extra_ids is \"2\", of the wrong type; expected a whole number"),
            std::string::npos);
  cfg = byt5_config();
  cfg["eos_token"] = 1;  // was passed over for the default "</s>"
  dir.write("tokenizer_config.json", cfg.dump());
  EXPECT_NE(user_error([&] { ByT5Tokenizer::load(dir.path()); })
                .find("tokenizer_config.json: eos_token is 1; expected a token string"),
            std::string::npos);
  dir.write("tokenizer_config.json", byt5_config().dump());
  dir.write("special_tokens_map.json", R"({"pad_token": ["<pad>"]})");
  EXPECT_NE(user_error([&] { ByT5Tokenizer::load(dir.path()); })
                .find("special_tokens_map.json: pad_token is [\"<pad>\"]; expected a token string"),
            std::string::npos);
}

}  // namespace
