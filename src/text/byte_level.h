#pragma once
// GPT-2's byte-level alphabet: every byte is spelled as one printable code point (the printable
// Latin-1 bytes as themselves, the others as U+0100 onwards), so BPE works on text without control
// characters or spaces and never meets an unknown byte.
#include <string>
#include <string_view>

namespace dattn::text_detail {

// The code point that spells byte `b`.
char32_t byte_to_unicode(unsigned char b);
// `bytes` spelled in the byte-level alphabet, as UTF-8.
std::string byte_level_spell(std::string_view bytes);

}  // namespace dattn::text_detail
