#include "dattn/integer_text.h"

#include <optional>
#include <string_view>

#include "dattn/core/error.h"
#include "dattn/core/whole_number.h"

namespace dattn::tool {

std::string decimal_integer_text(const std::string& name, const std::string& text, std::int64_t min, std::uint64_t max) {
  const bool negative = min < 0 && !text.empty() && text[0] == '-';
  // The largest magnitude a negative value may have: -min, computed without overflowing INT64_MIN.
  const std::uint64_t limit = negative ? static_cast<std::uint64_t>(-(min + 1)) + 1 : max;
  const std::optional<std::uint64_t> magnitude = parse_whole_number(std::string_view(text).substr(negative ? 1 : 0), limit);
  if (magnitude && (negative || min <= 0 || *magnitude >= static_cast<std::uint64_t>(min)))
    return (negative && *magnitude ? "-" : "") + std::to_string(*magnitude);
  throw UserError(name + " '" + text + "': expected a whole number from " + std::to_string(min) + " to " +
                  std::to_string(max) + " (decimal digits only)");
}

}  // namespace dattn::tool
