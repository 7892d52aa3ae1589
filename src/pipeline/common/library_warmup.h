#pragma once
// A pipeline's CUDA library state (cuBLASLt, cuDNN: ops/cuda_libraries.h) made on a thread of its own
// while the components load, instead of inside the first text encode and the first VAE decode.
#include <memory>
#include <thread>

#include "dattn/core/run_context.h"

namespace dattn::pipeline {

// The thread making it, bound to `context` (joined when the returned jthread is destroyed: keep it in a
// member declared after everything the loads use); an empty jthread for a CPU context. A failure there
// is left to the first op that needs the state: it makes it again and reports its own error.
std::jthread prepare_libraries_in_background(const std::shared_ptr<RunContext>& context);

}  // namespace dattn::pipeline
