// Refusing requests that cannot fit in memory (see memory_check.h).
#include "pipeline/common/memory_check.h"

#include <algorithm>

#include "dattn/core/checked_math.h"
#include "dattn/core/error.h"
#include "dattn/core/human_bytes.h"
#include "dattn/core/process_memory.h"

namespace dattn::pipeline {

std::int64_t checked_product(std::initializer_list<std::int64_t> factors, std::string_view what) {
  std::int64_t n = 1;
  for (std::int64_t f : factors) n = checked_mul(n, f, what);
  return n;
}

std::int64_t StageNeed::total() const {
  std::int64_t sum = 0;
  for (const auto& [name, bytes] : parts) sum = checked_add(sum, bytes, "memory estimate of " + stage);
  return sum;
}

void check_memory_fits(const std::vector<StageNeed>& stages, const std::string& hint) {
  const std::int64_t host = host_memory_available_bytes();
  // Asked only when a stage is on the device: a CPU run must not initialise CUDA for it.
  const bool any_device = std::any_of(stages.begin(), stages.end(), [](const StageNeed& s) { return s.on_device; });
  const std::int64_t device = any_device ? cuda_free_memory_bytes() : -1;
  for (const StageNeed& s : stages) {
    const std::int64_t have = s.on_device ? device : host;
    const std::int64_t need = s.total();
    if (have < 0 || need <= have) continue;
    std::vector<std::pair<std::string, std::int64_t>> parts = s.parts;
    std::sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string detail;
    for (std::size_t i = 0; i < parts.size() && i < 3; ++i)
      detail += (i ? ", " : "") + parts[i].first + " " + human_bytes(parts[i].second);
    throw UserError("this request needs at least " + human_bytes(need) + " of " +
                    (s.on_device ? "device" : "host") + " memory in the " + s.stage + " stage (" + detail + "), " +
                    human_bytes(have) + " available; " + hint);
  }
}

}  // namespace dattn::pipeline
