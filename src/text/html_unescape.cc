// html.unescape with Python's exact matching rules: the pattern
//   &(#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f <&#;]{1,32};?)
// scanned left to right over code points, each match replaced as _replace_charref does.
#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>

#include "dattn/text/prompt_clean.h"
#include "text/html_entities.h"
#include "text/utf8.h"

namespace dattn {
namespace {

using text_detail::append_utf8;

// Numeric references the HTML5 standard maps elsewhere (NUL, CR and the windows-1252 range).
const std::unordered_map<char32_t, char32_t>& invalid_charrefs() {
  static const std::unordered_map<char32_t, char32_t> table = {
      {0x00, 0xFFFD}, {0x0D, 0x0D},   {0x80, 0x20AC}, {0x81, 0x81},   {0x82, 0x201A}, {0x83, 0x0192},
      {0x84, 0x201E}, {0x85, 0x2026}, {0x86, 0x2020}, {0x87, 0x2021}, {0x88, 0x02C6}, {0x89, 0x2030},
      {0x8A, 0x0160}, {0x8B, 0x2039}, {0x8C, 0x0152}, {0x8D, 0x8D},   {0x8E, 0x017D}, {0x8F, 0x8F},
      {0x90, 0x90},   {0x91, 0x2018}, {0x92, 0x2019}, {0x93, 0x201C}, {0x94, 0x201D}, {0x95, 0x2022},
      {0x96, 0x2013}, {0x97, 0x2014}, {0x98, 0x02DC}, {0x99, 0x2122}, {0x9A, 0x0161}, {0x9B, 0x203A},
      {0x9C, 0x0153}, {0x9D, 0x9D},   {0x9E, 0x017E}, {0x9F, 0x0178}};
  return table;
}

// Code points a numeric reference may not produce: they are dropped.
bool is_invalid_codepoint(std::uint64_t n) {
  return (n >= 0x1 && n <= 0x8) || n == 0xB || (n >= 0xE && n <= 0x1F) || (n >= 0x7F && n <= 0x9F) ||
         (n >= 0xFDD0 && n <= 0xFDEF) || (n <= 0x10FFFF && (n & 0xFFFE) == 0xFFFE);
}

void append_numeric(std::string& out, std::uint64_t n) {
  if (auto it = invalid_charrefs().find(static_cast<char32_t>(n)); n <= 0x9F && it != invalid_charrefs().end())
    return append_utf8(out, it->second);
  if ((n >= 0xD800 && n <= 0xDFFF) || n > 0x10FFFF) return append_utf8(out, 0xFFFD);
  if (is_invalid_codepoint(n)) return;
  append_utf8(out, static_cast<char32_t>(n));
}

bool is_dec(char32_t c) { return c >= '0' && c <= '9'; }
bool is_hex(char32_t c) { return is_dec(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
int hex_value(char32_t c) { return is_dec(c) ? int(c - '0') : int((c | 0x20) - 'a' + 10); }
bool is_name_char(char32_t c) {
  return c != '\t' && c != '\n' && c != '\f' && c != ' ' && c != '<' && c != '&' && c != '#' && c != ';';
}

// The ASCII text of s[b, e), or empty when it holds other characters (no entity name does).
std::string ascii(const std::u32string& s, std::size_t b, std::size_t e) {
  std::string out;
  for (std::size_t i = b; i < e; ++i) {
    if (s[i] > 0x7F) return {};
    out.push_back(static_cast<char>(s[i]));
  }
  return out;
}

// Tries a reference at s[amp] == '&'; appends its replacement and returns the index after the match,
// or returns amp when the pattern does not match there.
std::size_t replace_at(const std::u32string& s, std::size_t amp, std::string& out) {
  std::size_t i = amp + 1;
  if (i < s.size() && s[i] == '#') {
    const bool hex = i + 1 < s.size() && (s[i + 1] == 'x' || s[i + 1] == 'X');
    std::size_t d = i + (hex ? 2 : 1), e = d;
    std::uint64_t n = 0;
    while (e < s.size() && (hex ? is_hex(s[e]) : is_dec(s[e]))) {
      n = std::min<std::uint64_t>(n * (hex ? 16 : 10) + (hex ? hex_value(s[e]) : s[e] - '0'), 0x7FFFFFFF);
      ++e;
    }
    if (e == d) return amp;  // "&#" or "&#x" without digits: no match ('#' is not a name character)
    if (e < s.size() && s[e] == ';') ++e;
    append_numeric(out, n);
    return e;
  }
  std::size_t e = i;
  while (e < s.size() && e - i < 32 && is_name_char(s[e])) ++e;
  if (e == i) return amp;
  if (e < s.size() && s[e] == ';') ++e;
  const std::string name = ascii(s, i, e);
  if (auto cp = text_detail::find_html_entity(name)) {
    append_utf8(out, *cp);
    return e;
  }
  // The longest prefix (of length >= 2) that is a name valid without ';', the rest kept as written.
  for (std::size_t x = e - i - 1; x >= 2; --x) {
    if (auto cp = text_detail::find_html_entity(ascii(s, i, i + x))) {
      append_utf8(out, *cp);
      for (std::size_t k = i + x; k < e; ++k) append_utf8(out, s[k]);
      return e;
    }
  }
  out.push_back('&');
  for (std::size_t k = i; k < e; ++k) append_utf8(out, s[k]);
  return e;
}

}  // namespace

std::string html_unescape(std::string_view text) {
  if (text.find('&') == std::string_view::npos) return std::string(text);
  const std::u32string s = text_detail::decode_utf8(text, "the prompt");
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < s.size();) {
    if (s[i] == '&') {
      const std::size_t next = replace_at(s, i, out);
      if (next != i) {
        i = next;
        continue;
      }
    }
    append_utf8(out, s[i++]);
  }
  return out;
}

std::string clean_prompt(std::string_view prompt) {
  const std::u32string s = text_detail::decode_utf8(html_unescape(html_unescape(prompt)), "the prompt");
  // Stripping then folding equals diffusers' strip / fold / strip.
  std::string out;
  bool pending_space = false;
  for (char32_t c : s) {
    if (text_detail::is_python_space(c)) {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) out.push_back(' ');
    pending_space = false;
    append_utf8(out, c);
  }
  return out;
}

}  // namespace dattn
