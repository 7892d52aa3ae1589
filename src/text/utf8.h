#pragma once
// UTF-8 <-> code points, and the whitespace classes of Python's str and of Rust (HF tokenizers).
#include <string>
#include <string_view>

namespace dattn::text_detail {

// Throws UserError "<what> is not valid UTF-8 at byte N" for malformed, overlong or surrogate sequences.
std::u32string decode_utf8(std::string_view text, std::string_view what);
void append_utf8(std::string& out, char32_t c);
std::string encode_utf8(std::u32string_view text);

// Python's str.isspace(): what re's \s and str.strip() match.
bool is_python_space(char32_t c);
// Rust's char::is_whitespace (Unicode White_Space): what Hugging Face tokenizers strips around added tokens.
bool is_rust_space(char32_t c);

}  // namespace dattn::text_detail
