#pragma once
// The ByT5 tokenizer of a checkpoint folder (transformers' ByT5Tokenizer): every UTF-8 byte b of the text
// is the id b + offset, where offset is the number of its three special tokens pad, eos and unk (ids
// 0..2); added tokens (the <extra_id_N> sentinels, Glyph-SDXL's <color-N>, <en-font-N>, ... and the
// three specials written out) are found in the text first, with their lstrip / rstrip flags.
// encode() is tokenizer(texts, padding="max_length", max_length=L, truncation=True, add_special_tokens=True).
// The strip flags follow transformers' Python tokenizer (the neighbours of such a token lose their
// whitespace on that side, Python's str.strip() whitespace); the golden case has no such token.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dattn/text/tokenizer.h"

namespace dattn {

class ByT5Tokenizer {
 public:
  // Reads DIR/tokenizer_config.json (pad_token, eos_token, unk_token, added_tokens_decoder, extra_ids) and,
  // when present, DIR/added_tokens.json and DIR/special_tokens_map.json. Throws UserError naming the file.
  static ByT5Tokenizer load(const std::string& tokenizer_dir);

  // The ids of `text` (UTF-8; UserError otherwise) without end-of-sequence token or padding.
  std::vector<int> encode_pieces(std::string_view text) const;
  // Ids truncated to max_length - 1, then end-of-sequence, then padding with pad_id() to max_length.
  TokenizedBatch encode(const std::vector<std::string>& texts, int max_length) const;

  int pad_id() const { return pad_id_; }
  int eos_id() const { return eos_id_; }
  int unk_id() const { return unk_id_; }
  int byte_offset() const { return byte_offset_; }
  std::size_t added_token_count() const;

 private:
  struct Added {
    std::string content;
    int id;
    bool lstrip, rstrip;
  };
  std::vector<Added> added_;
  int pad_id_ = 0, eos_id_ = 1, unk_id_ = 2, byte_offset_ = 3;
};

}  // namespace dattn
