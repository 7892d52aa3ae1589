#include "dattn/seed_text.h"

#include <charconv>
#include <system_error>

#include "dattn/core/error.h"

namespace dattn::tool {

std::uint64_t parse_seed(const std::string& text, std::uint64_t max) {
  std::uint64_t value = 0;
  // from_chars takes digits only: no sign, no spaces, no hex prefix; overflow is reported, not wrapped.
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, 10);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value > max)
    throw UserError("--seed '" + text + "': expected a whole number from 0 to " + std::to_string(max));
  return value;
}

}  // namespace dattn::tool
