#pragma once
// --seed's text as a number: a whole decimal number in [0, max], refused otherwise. CLI11 2.1 would turn
// -1 into 2^64 - 1 and 2^64 into 2^64 - 1 for an unsigned 64-bit option: two different requests would
// silently run one seed. Kept apart from CLI11, whose header costs ~10 s of compile per file.
#include <cstdint>
#include <limits>
#include <string>

namespace dattn::tool {

// Throws UserError "--seed 'TEXT': expected a whole number from 0 to MAX".
std::uint64_t parse_seed(const std::string& text, std::uint64_t max = std::numeric_limits<std::uint64_t>::max());

}  // namespace dattn::tool
