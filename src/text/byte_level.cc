#include "text/byte_level.h"

#include <array>

#include "text/utf8.h"

namespace dattn::text_detail {

namespace {

// Bytes '!'..'~', 0xA1..0xAC and 0xAE..0xFF keep their code point; the 68 others get 256, 257, ... in order.
std::array<char32_t, 256> make_table() {
  std::array<char32_t, 256> t{};
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    t[static_cast<std::size_t>(b)] = printable ? static_cast<char32_t>(b) : next++;
  }
  return t;
}

const std::array<char32_t, 256>& table() {
  static const std::array<char32_t, 256> t = make_table();
  return t;
}

}  // namespace

char32_t byte_to_unicode(unsigned char b) { return table()[b]; }

std::string byte_level_spell(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) append_utf8(out, byte_to_unicode(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace dattn::text_detail
