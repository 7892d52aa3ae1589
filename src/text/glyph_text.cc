// hv15::extract_glyph_text: the quoted strings of a prompt, found as Python's re.findall finds
// "(.*?)"|“(.*?)” (no DOTALL: a quote does not reach over a newline).
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "dattn/text/hv15_prompt.h"
#include "text/utf8.h"

namespace dattn::hv15 {

namespace {

constexpr std::string_view kOpenCurly = "\u201C", kCloseCurly = "\u201D";

// The next `needle` at or after `from` in `text`, for calls whose `from` never decreases: a search is
// reused until `from` passes its result, so the searches cover the text once. Searching afresh from every
// opening quote was O(n^2): a prompt of 40,000 unclosed curly quotes rescanned the rest for each.
class NextFinder {
 public:
  NextFinder(std::string_view text, std::string_view needle) : text_(text), needle_(needle) {}
  std::size_t at(std::size_t from) {
    if (!searched_ || (found_ != std::string_view::npos && found_ < from)) found_ = text_.find(needle_, from);
    searched_ = true;
    return found_;
  }

 private:
  std::string_view text_, needle_;
  std::size_t found_ = 0;
  bool searched_ = false;
};

// One alternative of the pattern: its quotes, and where the next closing quote and newline are.
struct Quote {
  std::string_view open, close;
  NextFinder next_close, next_newline;
  Quote(std::string_view text, std::string_view o, std::string_view c)
      : open(o), close(c), next_close(text, c), next_newline(text, "\n") {}
  // The closing quote for an opening that ends at `from`, on the same line; npos when there is none.
  std::size_t closing(std::size_t from) {
    const std::size_t end = next_close.at(from);
    if (end == std::string_view::npos) return end;
    const std::size_t newline = next_newline.at(from);
    return newline == std::string_view::npos || newline > end ? end : std::string_view::npos;
  }
};

}  // namespace

std::optional<std::string> extract_glyph_text(std::string_view prompt) {
  text_detail::decode_utf8(prompt, "the prompt");
  std::vector<std::string> found;
  Quote quotes[] = {{prompt, "\"", "\""}, {prompt, kOpenCurly, kCloseCurly}};
  std::size_t pos = 0;
  while (pos < prompt.size()) {
    // The first alternative is tried first at each position, then the second.
    bool matched = false;
    for (Quote& q : quotes) {
      if (prompt.compare(pos, q.open.size(), q.open) != 0) continue;
      const std::size_t end = q.closing(pos + q.open.size());
      if (end == std::string_view::npos) continue;
      found.emplace_back(prompt.substr(pos + q.open.size(), end - pos - q.open.size()));
      pos = end + q.close.size();
      matched = true;
      break;
    }
    if (!matched) ++pos;
  }
  if (found.empty()) return std::nullopt;
  std::vector<std::string> unique;  // the first of each, in order (a set: a linear search was O(n^2) too)
  std::unordered_set<std::string> seen;
  for (std::string& f : found)
    if (seen.insert(f).second) unique.push_back(std::move(f));
  found = std::move(unique);
  std::string out;
  for (std::size_t i = 0; i < found.size(); ++i)
    out.append(i ? ". " : "").append("Text \"").append(found[i]).append("\"");
  return out + ". ";
}

}  // namespace dattn::hv15
