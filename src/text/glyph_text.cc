// hv15::extract_glyph_text: the quoted strings of a prompt, found as Python's re.findall finds
// "(.*?)"|“(.*?)” (no DOTALL: a quote does not reach over a newline).
#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dattn/text/hv15_prompt.h"
#include "text/utf8.h"

namespace dattn::hv15 {

namespace {

constexpr std::string_view kOpenCurly = "\u201C", kCloseCurly = "\u201D";

// The end of the closing `close` after `from` on the same line, or npos.
std::size_t closing(std::string_view text, std::size_t from, std::string_view close) {
  const std::size_t end = text.find(close, from);
  if (end == std::string_view::npos) return end;
  return text.substr(from, end - from).find('\n') == std::string_view::npos ? end : std::string_view::npos;
}

}  // namespace

std::optional<std::string> extract_glyph_text(std::string_view prompt) {
  text_detail::decode_utf8(prompt, "the prompt");
  std::vector<std::string> found;
  std::size_t pos = 0;
  while (pos < prompt.size()) {
    // The first alternative is tried first at each position, then the second.
    bool matched = false;
    for (const auto& [open, close] :
         {std::pair{std::string_view("\""), std::string_view("\"")}, std::pair{kOpenCurly, kCloseCurly}}) {
      if (prompt.compare(pos, open.size(), open) != 0) continue;
      const std::size_t end = closing(prompt, pos + open.size(), close);
      if (end == std::string_view::npos) continue;
      found.emplace_back(prompt.substr(pos + open.size(), end - pos - open.size()));
      pos = end + close.size();
      matched = true;
      break;
    }
    if (!matched) ++pos;
  }
  if (found.empty()) return std::nullopt;
  if (found.size() > 1) {  // keep the first of each, in order
    std::vector<std::string> unique;
    for (std::string& f : found)
      if (std::find(unique.begin(), unique.end(), f) == unique.end()) unique.push_back(std::move(f));
    found = std::move(unique);
  }
  std::string out;
  for (std::size_t i = 0; i < found.size(); ++i)
    out.append(i ? ". " : "").append("Text \"").append(found[i]).append("\"");
  return out + ". ";
}

}  // namespace dattn::hv15
