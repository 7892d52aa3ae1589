// Checked size arithmetic (see checked_math.h).
#include "dattn/core/checked_math.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "dattn/core/error.h"

namespace dattn {
namespace {

[[noreturn]] void overflow(std::int64_t a, const char* op, std::int64_t b, std::string_view what) {
  throw UserError(std::string(what) + ": " + std::to_string(a) + " " + op + " " + std::to_string(b) +
                  " overflows 64-bit sizes (far more than any machine holds)");
}

void require_non_negative(std::int64_t a, std::int64_t b, std::string_view what) {
  if (a < 0 || b < 0) throw std::invalid_argument(std::string(what) + ": size arithmetic on a negative value");
}

}  // namespace

std::int64_t checked_mul(std::int64_t a, std::int64_t b, std::string_view what) {
  require_non_negative(a, b, what);
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) overflow(a, "x", b, what);
  return r;
}

std::int64_t checked_add(std::int64_t a, std::int64_t b, std::string_view what) {
  require_non_negative(a, b, what);
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) overflow(a, "+", b, what);
  return r;
}

std::optional<std::int64_t> product_if_fits(const std::vector<std::int64_t>& dims) {
  std::int64_t n = 1;
  bool overflowed = false;
  for (std::int64_t d : dims) overflowed = __builtin_mul_overflow(n, d, &n) || overflowed;
  // A zero dimension makes the product 0 however large the others are.
  if (overflowed && std::find(dims.begin(), dims.end(), 0) == dims.end()) return std::nullopt;
  return overflowed ? 0 : n;
}

}  // namespace dattn
