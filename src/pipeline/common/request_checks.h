#pragma once
// Request checks that every video family shares, with messages that say what is expected and suggest
// the nearest values that work.
#include <cstdint>
#include <string>

#include "dattn/pipeline/pipeline.h"

namespace dattn::pipeline {

// `flag value must be a positive multiple of M (why); try A or B`.
void check_multiple(const char* flag, std::int64_t value, std::int64_t multiple, const std::string& why);
// The --flow-shift range. diffusers takes any float; dattn refuses what cannot be meant: shift s and 1/s
// mirror each other (sigma' = s sigma / (1 + (s - 1) sigma)), and at s = 100 half the schedule already
// sits above sigma 0.99 (at 0.01, below 0.01), while models use 1 to 17 (Wan 3-12, HunyuanVideo up
// to 17). At 1e9 the float32 sigmas round to 1 and the solver divides by zero. A scheduler config's
// shift / flow_shift is held to the same range (scheduler_config.cc).
inline constexpr double kMinFlowShift = 0.01, kMaxFlowShift = 100.0;
// The --guidance-scale ceiling. diffusers takes any float; models use 1 to about 20 (Wan2.2 5, HunyuanVideo-1.5
// 6), far above that the prediction is the branches' difference magnified, and near 1e38 it overflows float32
// (a run that fails at step 1 blaming the weights).
inline constexpr double kMaxGuidanceScale = 100.0;

// Prompts in UTF-8, frames k * temporal + 1, steps in 1..max_steps (the scheduler's num_train_timesteps), a
// guidance scale in [0, kMaxGuidanceScale], a flow shift in [kMinFlowShift, kMaxFlowShift].
void check_common_fields(const GenerationRequest& r, std::int64_t temporal_factor, int max_steps);

// The request's initial latents, when given, have shape `want` and are finite.
void check_initial_latents(const GenerationRequest& r, const Shape& want);

}  // namespace dattn::pipeline
