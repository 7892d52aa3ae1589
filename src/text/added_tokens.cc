#include "text/added_tokens.h"

#include <cstddef>
#include <string_view>
#include <vector>

namespace dattn::text_detail {

namespace {

bool is_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// The code point starting at `pos` of valid UTF-8 `text`, and its length in bytes.
char32_t decode_at(std::string_view text, std::size_t pos, std::size_t& len) {
  const auto b0 = static_cast<unsigned char>(text[pos]);
  len = b0 < 0x80 ? 1 : (b0 >> 5) == 0x6 ? 2 : (b0 >> 4) == 0xE ? 3 : 4;
  char32_t c = len == 1 ? b0 : len == 2 ? (b0 & 0x1F) : len == 3 ? (b0 & 0x0F) : (b0 & 0x07);
  for (std::size_t k = 1; k < len && pos + k < text.size(); ++k) c = (c << 6) | (text[pos + k] & 0x3F);
  return c;
}

// The longest token that starts at `pos`, or nullptr.
const AddedTokenSpec* longest_at(std::string_view text, std::size_t pos, const std::vector<AddedTokenSpec>& tokens) {
  const AddedTokenSpec* best = nullptr;
  for (const AddedTokenSpec& t : tokens)
    if ((!best || t.content.size() > best->content.size()) && text.compare(pos, t.content.size(), t.content) == 0)
      best = &t;
  return best;
}

}  // namespace

std::vector<Segment> split_added_tokens(std::string_view text, const std::vector<AddedTokenSpec>& tokens,
                                        bool (*is_space)(char32_t)) {
  std::vector<Segment> out;
  std::size_t plain_start = 0;  // where the pending plain segment begins
  std::size_t pos = 0;
  while (pos < text.size()) {
    const AddedTokenSpec* tok = is_continuation(text[pos]) ? nullptr : longest_at(text, pos, tokens);
    if (!tok) {
      ++pos;
      continue;
    }
    std::size_t begin = pos, end = pos + tok->content.size();
    if (tok->lstrip)  // whitespace back to the previous segment's end belongs to the token
      while (begin > plain_start) {
        std::size_t s = begin - 1, len = 0;
        while (s > plain_start && is_continuation(text[s])) --s;
        if (!is_space(decode_at(text, s, len))) break;
        begin = s;
      }
    if (tok->rstrip)
      while (end < text.size()) {
        std::size_t len = 0;
        if (!is_space(decode_at(text, end, len))) break;
        end += len;
      }
    if (begin > plain_start) out.push_back({text.substr(plain_start, begin - plain_start), -1});
    out.push_back({{}, tok->id});
    pos = plain_start = end;
  }
  if (plain_start < text.size()) out.push_back({text.substr(plain_start), -1});
  return out;
}

}  // namespace dattn::text_detail
