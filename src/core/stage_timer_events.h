#pragma once
// CUDA event pairs behind StageTimer (src/core/cuda/stage_timer_events.cu; stubs without CUDA). The
// events live in the run context they are recorded on (an extension made on first use) and are reused:
// pair i serves the i-th scope since the last collect().
#include <cstddef>

namespace dattn {
class RunContext;
}

namespace dattn::stage_events {

void begin(RunContext& context, std::size_t i);  // records pair i's begin event on the context's stream
void end(RunContext& context, std::size_t i);
// Waits for pair i's end event and returns its elapsed milliseconds (0 for a pair never ended).
double elapsed_ms(RunContext& context, std::size_t i);

}  // namespace dattn::stage_events
