#pragma once
// What HunyuanVideo-1.5's pipeline gives its two text encoders for a prompt:
//  - Qwen2.5-VL: the chat template of [system message, user prompt] plus the assistant's opening,
//    tokenized, truncated and right-padded to crop_index + tokenizer_max_length; the encoder's output
//    is later cropped at crop_index, the number of template tokens before the user's text;
//  - ByT5: the glyph text (the prompt's quoted strings, formatted), or nothing when it quotes nothing,
//    in which case the pipeline uses zero embeddings with an all-zero mask instead of running ByT5.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dattn/text/bpe_tokenizer.h"
#include "dattn/text/byt5_tokenizer.h"
#include "dattn/text/chat_template.h"
#include "dattn/text/tokenizer.h"

namespace dattn::hv15 {

// The pipeline's default system message.
std::string_view default_system_message();

// [system, user]; an empty prompt becomes the user content " ", as the pipeline substitutes.
std::vector<ChatMessage> prompt_messages(std::string_view prompt, std::string_view system_message);

// The ids of the rendered template before the user's text, counted with the checkpoint's own tokenizer;
// crop_index() is their number (108 for the released tokenizer).
std::vector<int> template_prefix_ids(const BpeTokenizer& tokenizer, const ChatTemplate& chat_template,
                                     std::string_view system_message);
std::int64_t crop_index(const BpeTokenizer& tokenizer, const ChatTemplate& chat_template,
                        std::string_view system_message);

// The Qwen input ids and mask [prompts, crop_index + tokenizer_max_length].
TokenizedBatch qwen_inputs(const BpeTokenizer& tokenizer, const ChatTemplate& chat_template,
                           const std::vector<std::string>& prompts, std::string_view system_message,
                           std::int64_t crop_index, int tokenizer_max_length);

// The text inside "..." and “...” (on one line, shortest match, left to right), duplicates dropped
// when there are several, formatted as `Text "A". Text "B". `; nullopt when the prompt quotes nothing.
std::optional<std::string> extract_glyph_text(std::string_view prompt);

// ByT5 ids and mask [1, max_length] of the prompt's glyph text; nullopt when it has none: then the
// ByT5 embeddings are zeros and the mask all zero (the encoder is not run).
std::optional<TokenizedBatch> byt5_inputs(const ByT5Tokenizer& tokenizer, std::string_view prompt,
                                          int max_length = 256);

}  // namespace dattn::hv15
