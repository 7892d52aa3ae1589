#pragma once
// Request checks that every video family shares, with messages that say what is expected and suggest
// the nearest values that work.
#include <cstdint>
#include <string>

#include "dattn/pipeline/pipeline.h"

namespace dattn::pipeline {

// `flag value must be a positive multiple of M (why); try A or B`.
void check_multiple(const char* flag, std::int64_t value, std::int64_t multiple, const std::string& why);
// Frames k * temporal + 1, steps >= 1, a finite guidance scale >= 0, a positive flow shift.
void check_common_fields(const GenerationRequest& r, std::int64_t temporal_factor);

}  // namespace dattn::pipeline
