#pragma once
// --seed on a command, parsed by parse_seed (seed_text.h) so that out-of-range values are errors.
#include <cstdint>
#include <limits>
#include <string>

#include <CLI/CLI.hpp>

#include "dattn/integer_option.h"
#include "dattn/seed_text.h"

namespace dattn::tool {

// Registers --seed on `app`, stored in `seed` (whose value is the shown default). The callback runs
// during parsing; main turns its UserError into the usual one-line error.
inline CLI::Option* add_seed_option(CLI::App& app, std::uint64_t& seed, const std::string& help,
                                    std::uint64_t max = std::numeric_limits<std::uint64_t>::max()) {
  return app
      .add_option_function<std::string>(
          "--seed", [&seed, max](const std::string& text) { seed = parse_seed(text, max); }, help)
      ->transform(decimal_integer_check("--seed", 0, max))  // as every integer flag; parse_seed checks again
      ->type_name("UINT")
      ->default_str(std::to_string(seed));
}

}  // namespace dattn::tool
