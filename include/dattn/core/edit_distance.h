#pragma once
// Levenshtein distance, for "did you mean" hints in error messages.
#include <cstddef>
#include <string>
#include <vector>

namespace dattn {

std::size_t edit_distance(const std::string& a, const std::string& b);

// The candidate closest to `name`, or "" when none is within max(2, name.size() / 3) edits (a
// suggestion further off would mislead more than help).
std::string closest_name(const std::string& name, const std::vector<std::string>& candidates);

}  // namespace dattn
