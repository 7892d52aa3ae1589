#include "dattn/seed_text.h"

#include "dattn/core/error.h"
#include "dattn/core/whole_number.h"

namespace dattn::tool {

std::uint64_t parse_seed(const std::string& text, std::uint64_t max) {
  if (const auto value = parse_whole_number(text, max)) return *value;
  throw UserError("--seed '" + text + "': expected a whole number from 0 to " + std::to_string(max));
}

}  // namespace dattn::tool
