#pragma once
// Byte counts for messages.
#include <cstdint>
#include <string>

namespace dattn {

// "2.0 TiB", "12.3 GiB", "512.0 MiB" or "42 bytes".
std::string human_bytes(std::int64_t bytes);

}  // namespace dattn
