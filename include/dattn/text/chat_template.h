#pragma once
// A checkpoint's chat template (what transformers' apply_chat_template renders), implemented in C++ for
// the templates dattn knows, recognised by their exact text: no Jinja engine runs. Today that is
// Qwen2.5-VL's template (HunyuanVideo-1.5's text encoder), for messages whose content is a string.
// Any other template is refused with a one-line UserError naming the file.
#include <string>
#include <string_view>
#include <vector>

namespace dattn {

struct ChatMessage {
  std::string role;     // "system", "user", "assistant"
  std::string content;  // text only (no image or video parts)
};

class ChatTemplate {
 public:
  enum class Kind { kQwen25Vl };

  // DIR/chat_template.jinja when present (transformers 5 writes it; it takes precedence, as there), else
  // DIR/tokenizer_config.json's "chat_template" (a string, or a list of {name, template} whose "default"
  // entry is used), else DIR/chat_template.json's "chat_template" (older processor folders).
  static ChatTemplate load(const std::string& tokenizer_dir);
  // `text` must equal a known template exactly, or with one trailing newline (Jinja drops it when
  // rendering); `source` names where it came from in the error.
  static ChatTemplate from_text(std::string_view text, const std::string& source);

  Kind kind() const { return kind_; }
  const char* name() const;  // "Qwen2.5-VL"

  // apply_chat_template(messages, add_generation_prompt=..., tokenize=False).
  std::string render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;
  // The rendered text of [system, user] before the user's content: what the crop index counts.
  std::string user_content_prefix(std::string_view system_message) const;

 private:
  explicit ChatTemplate(Kind kind) : kind_(kind) {}
  Kind kind_;
};

}  // namespace dattn
