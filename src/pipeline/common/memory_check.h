#pragma once
// A request's memory, estimated before any work and refused when it cannot fit: an oversized frame or
// frame count would otherwise end hours later in std::bad_alloc or the OOM killer. Families compute a
// lower bound of what each stage must hold (what surely gets allocated, not a guess at the rest), so
// a refusal is certain and a request that fits is never refused.
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dattn/core/device.h"

namespace dattn::pipeline {

// What one stage holds at once, on one side (host or device), as named parts.
struct StageNeed {
  std::string stage;  // "denoising", "vae decode", ...
  bool on_device = false;  // CUDA device memory; else host memory
  std::vector<std::pair<std::string, std::int64_t>> parts;  // "transformer weights" -> bytes
  std::int64_t total() const;
};

// The product of `factors`, overflow-checked: UserError naming `what` (the request fields it comes from).
std::int64_t checked_product(std::initializer_list<std::int64_t> factors, std::string_view what);

// Throws UserError when a stage needs more than is available: host MemAvailable, or the free memory of
// the current CUDA device for device stages (where either cannot be asked, that side is not checked).
// The message names the stage, the estimate and its largest parts, what is available, and `hint`.
void check_memory_fits(const std::vector<StageNeed>& stages, const std::string& hint);

}  // namespace dattn::pipeline
