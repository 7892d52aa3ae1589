// ChatTemplate: recognised by its exact text, refused otherwise (naming the file), rendered as Jinja would.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "dattn/core/error.h"
#include "dattn/text/chat_template.h"
#include "golden_case.h"
#include "support/config_error.h"
#include "support/temp_folder.h"
#include "text/known_chat_templates.h"

using namespace dattn;

namespace {

const std::string kQwen = dattn::text_detail::kQwen25VlChatTemplate;

TEST(ChatTemplate, RecognisesQwen25VlExactlyOrWithOneTrailingNewline) {
  EXPECT_EQ(ChatTemplate::from_text(kQwen, "t").kind(), ChatTemplate::Kind::kQwen25Vl);
  EXPECT_EQ(ChatTemplate::from_text(kQwen + "\n", "t").kind(), ChatTemplate::Kind::kQwen25Vl);
  // Any other change is another template: two newlines, a space, a changed default system message.
  EXPECT_THROW(ChatTemplate::from_text(kQwen + "\n\n", "t"), UserError);
  EXPECT_THROW(ChatTemplate::from_text(" " + kQwen, "t"), UserError);
  std::string changed = kQwen;
  changed.replace(changed.find("helpful"), 7, "helpless");
  EXPECT_THROW(ChatTemplate::from_text(changed, "t"), UserError);
}

TEST(ChatTemplate, AnotherTemplateIsRefusedNamingTheFile) {
  dattn::testing::TempFolder dir;
  dir.write("tokenizer_config.json", nlohmann::json{{"chat_template", "{{ messages[0]['content'] }}"}}.dump());
  const std::string msg = user_error([&] { ChatTemplate::load(dir.path()); });
  EXPECT_NE(msg.find(dir.path() + "/tokenizer_config.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Qwen2.5-VL"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line: " << msg;
  // chat_template.jinja takes precedence over tokenizer_config.json.
  dir.write("tokenizer_config.json", nlohmann::json{{"chat_template", kQwen}}.dump());
  EXPECT_NO_THROW(ChatTemplate::load(dir.path()));
  dir.write("chat_template.jinja", "{% for m in messages %}{{ m.content }}{% endfor %}\n");
  EXPECT_NE(user_error([&] { ChatTemplate::load(dir.path()); }).find("chat_template.jinja"), std::string::npos);
  dir.write("chat_template.jinja", kQwen + "\n");
  EXPECT_NO_THROW(ChatTemplate::load(dir.path()));
}

TEST(ChatTemplate, MissingTemplateAndListForm) {
  dattn::testing::TempFolder dir;
  dir.write("tokenizer_config.json", "{}");
  EXPECT_NE(user_error([&] { ChatTemplate::load(dir.path()); }).find("no \"chat_template\""), std::string::npos);
  nlohmann::json list =
      nlohmann::json::array({{{"name", "tool_use"}, {"template", "x"}}, {{"name", "default"}, {"template", kQwen}}});
  dir.write("tokenizer_config.json", nlohmann::json{{"chat_template", list}}.dump());
  EXPECT_NO_THROW(ChatTemplate::load(dir.path()));
  dir.write("tokenizer_config.json", "{}");
  dir.write("chat_template.json", nlohmann::json{{"chat_template", kQwen}}.dump());
  EXPECT_NO_THROW(ChatTemplate::load(dir.path()));
}

TEST(ChatTemplate, RendersQwenTurns) {
  const ChatTemplate t = ChatTemplate::from_text(kQwen, "t");
  EXPECT_EQ(t.render({{"system", "S"}, {"user", "U"}}, true),
            "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n");
  // Without a system message first, the template's default one is added.
  EXPECT_EQ(t.render({{"user", "U"}}, false),
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nU<|im_end|>\n");
  EXPECT_EQ(t.render({}, true), "<|im_start|>assistant\n");
  EXPECT_EQ(t.user_content_prefix("S"), "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\n");
}

}  // namespace
