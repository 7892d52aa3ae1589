#pragma once
// Added tokens (special tokens and the like) are found in the text before any other processing, as
// Hugging Face does: leftmost match first, the longest token where several start at one place. A token
// with lstrip / rstrip also takes the whitespace to its left / right, which then produces no token.
#include <string>
#include <string_view>
#include <vector>

namespace dattn::text_detail {

struct AddedTokenSpec {
  std::string content;
  int id = -1;
  bool lstrip = false, rstrip = false, normalized = false, special = false;
};

struct Segment {
  std::string_view text;  // the text of a plain segment (empty for a token)
  int token_id = -1;      // >= 0: an added token
};

// `tokens` must be non-empty strings; `is_space` is the whitespace class of the implementation matched
// (Rust's for tokenizer.json, Python's for the Python tokenizers). Plain segments are never empty.
std::vector<Segment> split_added_tokens(std::string_view text, const std::vector<AddedTokenSpec>& tokens,
                                        bool (*is_space)(char32_t));

}  // namespace dattn::text_detail
