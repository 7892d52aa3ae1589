#pragma once
// --seed: a whole decimal number in [0, max], refused otherwise. CLI11 2.1 would turn -1 into 2^64 - 1
// and 2^64 into 2^64 - 1 for an unsigned 64-bit option: two different requests silently run one seed.
#include <cstdint>
#include <limits>
#include <string>

#include <CLI/CLI.hpp>

namespace dattn::tool {

// Parses `text` as a seed; throws UserError "--seed 'TEXT': expected a whole number from 0 to MAX".
std::uint64_t parse_seed(const std::string& text, std::uint64_t max = std::numeric_limits<std::uint64_t>::max());

// Registers --seed on `app`, stored in `seed` (whose value is the shown default).
CLI::Option* add_seed_option(CLI::App& app, std::uint64_t& seed, const std::string& help,
                             std::uint64_t max = std::numeric_limits<std::uint64_t>::max());

}  // namespace dattn::tool
