// Without CUDA, StageTimer::enable(Device::CUDA) refuses, so these are never reached.
#ifndef DATTN_WITH_CUDA
#include <stdexcept>

#include "core/stage_timer_events.h"

namespace dattn::stage_events {
void reset() {}
void begin(std::size_t) { throw std::logic_error("stage_events::begin without CUDA"); }
void end(std::size_t) { throw std::logic_error("stage_events::end without CUDA"); }
std::vector<double> elapsed_ms(std::size_t n) { return std::vector<double>(n, 0.0); }
}  // namespace dattn::stage_events
#endif
