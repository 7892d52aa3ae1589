#pragma once
// An integer flag's text read as plain decimal, as --seed is (seed_text.h): CLI11 2.1 reads "010" as 8
// (octal), "0x10" as 16 and takes " 5" and "+5" but not "5 ", so a typo ran other step counts in silence.
// Kept apart from CLI11, whose header costs ~10 s of compile per file.
#include <cstdint>
#include <string>

namespace dattn::tool {

// `text` as canonical decimal digits ("010" -> "10") when it is decimal digits only (after one '-' when
// min < 0) within [min, max]. Throws UserError "NAME 'TEXT': expected a whole number from MIN to MAX
// (decimal digits only)" otherwise: no sign, spaces, hex or octal prefix, exponent or overflow.
std::string decimal_integer_text(const std::string& name, const std::string& text, std::int64_t min, std::uint64_t max);

}  // namespace dattn::tool
