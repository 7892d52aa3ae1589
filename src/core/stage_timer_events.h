#pragma once
// CUDA event pairs behind StageTimer (src/core/cuda/stage_timer_events.cu; stubs without CUDA).
#include <cstddef>
#include <vector>

namespace dattn::stage_events {

void reset();                // forgets every recorded pair (events are reused)
void begin(std::size_t i);   // records the begin event of pair i on the default stream
void end(std::size_t i);
// Waits for the events and returns each pair's elapsed milliseconds (0 for a pair never ended).
std::vector<double> elapsed_ms(std::size_t n);

}  // namespace dattn::stage_events
