// hv15: the pipeline's messages, crop index and Qwen / ByT5 inputs (glyph extraction: glyph_text.cc).
#include "dattn/text/hv15_prompt.h"

#include <cstdint>

#include "dattn/core/error.h"

namespace dattn::hv15 {

std::string_view default_system_message() {
  // The pipeline writes it over several source lines; each continuation keeps the next line's indent,
  // hence the runs of nine spaces.
  return "You are a helpful assistant. Describe the video by detailing the following aspects:         "
         "1. The main content and theme of the video.         "
         "2. The color, shape, size, texture, quantity, text, and spatial relationships of the objects.         "
         "3. Actions, events, behaviors temporal relationships, physical movement changes of the objects.         "
         "4. background environment, light, style and atmosphere.         "
         "5. camera angles, movements, and transitions used in the video.";
}

std::vector<ChatMessage> prompt_messages(std::string_view prompt, std::string_view system_message) {
  return {{"system", std::string(system_message)}, {"user", prompt.empty() ? std::string(" ") : std::string(prompt)}};
}

std::vector<int> template_prefix_ids(const BpeTokenizer& tokenizer, const ChatTemplate& chat_template,
                                     std::string_view system_message) {
  return tokenizer.encode(chat_template.user_content_prefix(system_message));
}

std::int64_t crop_index(const BpeTokenizer& tokenizer, const ChatTemplate& chat_template,
                        std::string_view system_message) {
  return static_cast<std::int64_t>(template_prefix_ids(tokenizer, chat_template, system_message).size());
}

TokenizedBatch qwen_inputs(const BpeTokenizer& tokenizer, const ChatTemplate& chat_template,
                           const std::vector<std::string>& prompts, std::string_view system_message,
                           std::int64_t crop_index, int tokenizer_max_length) {
  if (crop_index < 0 || tokenizer_max_length < 1 || crop_index + tokenizer_max_length > INT32_MAX)
    throw UserError("HunyuanVideo-1.5 text input: crop index " + std::to_string(crop_index) +
                    " and tokenizer_max_length " + std::to_string(tokenizer_max_length) +
                    " must be >= 0 and >= 1 with a sum below 2^31");
  std::vector<std::string> rendered;
  rendered.reserve(prompts.size());
  for (const std::string& p : prompts)
    rendered.push_back(chat_template.render(prompt_messages(p, system_message), true));
  return tokenizer.encode_batch(rendered, static_cast<int>(crop_index + tokenizer_max_length));
}

std::optional<TokenizedBatch> byt5_inputs(const ByT5Tokenizer& tokenizer, std::string_view prompt, int max_length) {
  const std::optional<std::string> glyph = extract_glyph_text(prompt);
  if (!glyph) return std::nullopt;
  return tokenizer.encode({*glyph}, max_length);
}

}  // namespace dattn::hv15
