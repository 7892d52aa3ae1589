#pragma once
// A whole decimal number read from text, refused rather than wrapped or clamped: no sign, no spaces, no
// hex prefix, no overflow. Shared by `dattn generate --seed` and `dattn serve`'s form fields, so that
// "-1" or "2^64" never silently become another number.
#include <cstdint>
#include <optional>
#include <string_view>

namespace dattn {

// The value of `text` when it is digits only and at most `max`; nullopt otherwise.
std::optional<std::uint64_t> parse_whole_number(std::string_view text, std::uint64_t max);

}  // namespace dattn
