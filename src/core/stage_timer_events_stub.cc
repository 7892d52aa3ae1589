// Without CUDA, StageTimer::enable(Device::CUDA) refuses, so these are never reached.
#ifndef DATTN_WITH_CUDA
#include <stdexcept>

#include "core/stage_timer_events.h"

namespace dattn::stage_events {
void begin(RunContext&, std::size_t) { throw std::logic_error("stage_events::begin without CUDA"); }
void end(RunContext&, std::size_t) { throw std::logic_error("stage_events::end without CUDA"); }
double elapsed_ms(RunContext&, std::size_t) { return 0.0; }
}  // namespace dattn::stage_events
#endif
