#pragma once
// Text a client sent, made safe to echo: control characters escaped as JSON writes them (\n, \t, \u0000),
// so that a message is never cut at a NUL (what() ends there) nor split into two log lines.
#include <string>
#include <string_view>

namespace dattn::serve {

// Bytes below 0x20 and 0x7f escaped; everything else (UTF-8 included) as it is.
std::string printable(std::string_view text);

}  // namespace dattn::serve
