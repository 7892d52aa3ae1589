#pragma once
// Prompt cleaning as the Wan pipelines do it before tokenizing (diffusers prompt_clean): HTML-unescape
// twice, fold every whitespace run to one space, strip. diffusers runs ftfy.fix_text first when the
// optional ftfy package is installed; dattn does not. ftfy repairs mojibake ("cafÃ©") and also
// straightens curly quotes and applies NFC, so a prompt with ’ or “ can tokenize differently from a
// diffusers installation that has ftfy (the same as one without it).
#include <string>
#include <string_view>

namespace dattn {

// Python's html.unescape: numeric references (decimal and hex, with or without ';', with the HTML5
// replacements for 0, 0x80-0x9F, surrogates, out-of-range and noncharacter values) and named ones
// from dattn's table (the legacy names may omit ';' and match as the longest prefix, as in Python).
// Input and output are UTF-8; invalid UTF-8 throws UserError.
std::string html_unescape(std::string_view text);

// html_unescape twice, strip, whitespace runs (Python's str.isspace) -> one ' ', strip.
std::string clean_prompt(std::string_view prompt);

}  // namespace dattn
