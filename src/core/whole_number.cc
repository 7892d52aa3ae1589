#include "dattn/core/whole_number.h"

#include <charconv>
#include <system_error>

namespace dattn {

std::optional<std::uint64_t> parse_whole_number(std::string_view text, std::uint64_t max) {
  std::uint64_t value = 0;
  // from_chars takes digits only: no sign, no spaces, no hex prefix; overflow is reported, not wrapped.
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, 10);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value > max) return std::nullopt;
  return value;
}

}  // namespace dattn
