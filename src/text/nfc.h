#pragma once
// Unicode normalization form C (what tokenizer.json's {"type": "NFC"} normalizer does), via utf8proc.
#include <string>
#include <string_view>

namespace dattn::text_detail {

// `text` must be valid UTF-8 (callers validate first: the error then names their input).
std::string nfc(std::string_view text);

}  // namespace dattn::text_detail
