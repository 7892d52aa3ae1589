// ChatTemplate: recognising a checkpoint's template text, and rendering Qwen2.5-VL's.
#include "dattn/text/chat_template.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "dattn/core/error.h"
#include "dattn/core/files.h"
#include "text/json_file.h"
#include "text/known_chat_templates.h"

namespace dattn {

namespace {

std::string read_text(const std::string& path) {
  refuse_special_file(path, "chat template");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path + ": cannot be opened for reading");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Qwen2.5-VL, string contents: a default system turn when the first message is not one, then
// "<|im_start|>ROLE\nCONTENT<|im_end|>\n" per message, then the assistant's opening when asked.
void qwen_turn(std::string& out, std::string_view role, std::string_view content) {
  out.append("<|im_start|>").append(role).append("\n").append(content).append("<|im_end|>\n");
}

}  // namespace

ChatTemplate ChatTemplate::load(const std::string& dir) try {
  const std::string jinja = (std::filesystem::path(dir) / "chat_template.jinja").string();
  refuse_special_file(jinja, "chat template");
  if (std::filesystem::exists(jinja)) return from_text(read_text(jinja), jinja);
  const std::string config_path = (std::filesystem::path(dir) / "tokenizer_config.json").string();
  const nlohmann::json cfg = text_detail::read_json_object(
      config_path, "the tokenizer folder has no chat_template.jinja either, so it has no chat template");
  auto it = cfg.find("chat_template");
  if (it == cfg.end() || it->is_null()) {
    // Older processor folders keep it in chat_template.json instead: {"chat_template": "..."}.
    const std::string json_path = (std::filesystem::path(dir) / "chat_template.json").string();
    if (const auto j = text_detail::read_optional_json_object(json_path))
      if (auto t = j->find("chat_template"); t != j->end() && t->is_string())
        return from_text(t->get<std::string>(), json_path);
    throw UserError(config_path +
                    ": no \"chat_template\" (and no chat_template.jinja or chat_template.json beside "
                    "it); the pipeline renders its prompt with the checkpoint's chat template");
  }
  if (it->is_string()) return from_text(it->get<std::string>(), config_path);
  if (it->is_array())
    for (const auto& e : *it)
      if (e.is_object() && e.value("name", "") == "default" && e.contains("template") && e["template"].is_string())
        return from_text(e["template"].get<std::string>(), config_path + " (chat_template \"default\")");
  throw UserError(config_path + ": \"chat_template\" must be a string or a list with a \"default\" entry, got " +
                  it->dump().substr(0, 80));
} catch (const nlohmann::json::exception& e) {  // a field of the wrong type
  throw UserError(dir + ": the chat template's file has a field of the wrong type: " + e.what());
}

ChatTemplate ChatTemplate::from_text(std::string_view text, const std::string& source) {
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  if (text == text_detail::kQwen25VlChatTemplate) return ChatTemplate(Kind::kQwen25Vl);
  throw UserError(source +
                  ": the chat template is not one dattn implements (it renders only Qwen2.5-VL's, "
                  "recognised by its exact text; " +
                  std::to_string(text.size()) + " characters here)");
}

const char* ChatTemplate::name() const { return "Qwen2.5-VL"; }

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
  std::string out;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    if (i == 0 && messages[i].role != "system") qwen_turn(out, "system", "You are a helpful assistant.");
    qwen_turn(out, messages[i].role, messages[i].content);
  }
  if (add_generation_prompt) out.append("<|im_start|>assistant\n");
  return out;
}

std::string ChatTemplate::user_content_prefix(std::string_view system_message) const {
  std::string out;
  qwen_turn(out, "system", system_message);
  out.append("<|im_start|>user\n");
  return out;
}

}  // namespace dattn
