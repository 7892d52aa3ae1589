#pragma once
// A byte-level BPE tokenizer (Qwen2, GPT-2 family) read from a Hugging Face tokenizer.json, producing
// what transformers' tokenizers-backed tokenizer gives with add_special_tokens=False:
//  1. added tokens (tokenizer.json's "added_tokens") are found in the raw text first, leftmost-longest,
//     with their lstrip / rstrip flags; those marked normalized are found after normalization instead;
//  2. each other segment is normalized ("normalizer": NFC or none), pre-tokenized ("pre_tokenizer":
//     Split with the file's regex, run by PCRE2 in UTF + UCP mode, then ByteLevel's byte -> code point
//     spelling) and each piece is encoded by the BPE model, merges applied by rank.
// What it does not implement (another normalizer or pre-tokenizer type, a post-processor that adds
// tokens, BPE dropout, byte fallback, single_word added tokens) is refused when the file is read.
// Where it can differ from Hugging Face: the regex runs on PCRE2's Unicode tables instead of
// Oniguruma's, and NFC on utf8proc's instead of the unicode-normalization crate's, so characters whose
// properties changed between Unicode versions (U+180E is \s for PCRE2 10.42) may split differently.
#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dattn/text/tokenizer.h"

namespace dattn {

class BpeTokenizer {
 public:
  // Reads DIR/tokenizer.json, and DIR/tokenizer_config.json when present for pad_token, eos_token and
  // model_max_length (else tokenizer.json's "padding" for the pad token). Throws UserError naming the file.
  static BpeTokenizer load(const std::string& tokenizer_dir);
  // From the text of a tokenizer.json and of a tokenizer_config.json; the sources name them in errors.
  static BpeTokenizer from_json(const std::string& tokenizer_json, const std::string& source,
                                const std::string& tokenizer_config_json = "{}",
                                const std::string& config_source = "tokenizer_config.json");
  BpeTokenizer(BpeTokenizer&&) noexcept;
  BpeTokenizer& operator=(BpeTokenizer&&) noexcept;
  ~BpeTokenizer();

  // The ids of `text` (UTF-8; UserError otherwise), no special tokens added.
  std::vector<int> encode(std::string_view text) const;
  // Each text's ids truncated to max_length, then padded on the right with pad_id() to max_length;
  // attention mask 1 for the tokens. No end-of-sequence token is added (Qwen2 adds none).
  TokenizedBatch encode_batch(const std::vector<std::string>& texts, int max_length) const;

  // The id of a vocabulary or added token, spelled as in tokenizer.json.
  std::optional<int> token_id(std::string_view token) const;
  // tokenizer_config.json's pad_token (else tokenizer.json's padding.pad_id); UserError when neither names one.
  int pad_id() const;
  std::optional<int> eos_id() const { return eos_id_; }
  std::int64_t model_max_length() const { return model_max_length_; }

 private:
  struct Impl;
  explicit BpeTokenizer(std::unique_ptr<Impl> impl);
  static BpeTokenizer from_parsed(const nlohmann::json& j, const std::string& source, const nlohmann::json& cfg,
                                  const std::string& config_source);
  std::unique_ptr<Impl> impl_;
  std::optional<int> pad_id_, eos_id_;
  std::int64_t model_max_length_ = INT32_MAX;
  std::string config_source_;
};

}  // namespace dattn
