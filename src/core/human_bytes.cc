// Byte counts for messages (see human_bytes.h).
#include "dattn/core/human_bytes.h"

#include <cstdio>

namespace dattn {

std::string human_bytes(std::int64_t bytes) {
  char buf[64];
  const double b = static_cast<double>(bytes);
  if (bytes >= (std::int64_t{1} << 40)) std::snprintf(buf, sizeof buf, "%.1f TiB", b / double(std::int64_t{1} << 40));
  else if (bytes >= (std::int64_t{1} << 30)) std::snprintf(buf, sizeof buf, "%.1f GiB", b / (1 << 30));
  else if (bytes >= (std::int64_t{1} << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1 << 20));
  else std::snprintf(buf, sizeof buf, "%lld bytes", static_cast<long long>(bytes));
  return buf;
}

}  // namespace dattn
