#pragma once
// Size arithmetic with overflow checks. Element counts and byte sizes come from files and command
// lines; a product that wraps around would allocate a small buffer and index past it, so every size
// that can come from outside is computed here and an overflow is the user's error, named. Nothing is
// allocated unless a check fails (these run on every tensor's numel()).
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace dattn {

// a * b and a + b for non-negative a and b; UserError "<what>: <a> x <b> overflows 64-bit sizes".
std::int64_t checked_mul(std::int64_t a, std::int64_t b, std::string_view what);
std::int64_t checked_add(std::int64_t a, std::int64_t b, std::string_view what);
// The product of non-negative `dims`, or nullopt when it does not fit in int64 (a zero dimension
// gives 0 whatever the others are).
std::optional<std::int64_t> product_if_fits(const std::vector<std::int64_t>& dims);

}  // namespace dattn
