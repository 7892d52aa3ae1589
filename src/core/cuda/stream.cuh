#pragma once
// The stream CUDA work of the calling thread runs on: the current context's (run_context.h). Ops read
// it once and pass it to every launch; a problem that names no stream (nullptr) runs there too.
#include <cuda_runtime.h>

#include "dattn/core/run_context.h"

namespace dattn::cuda {

inline cudaStream_t current_stream() { return static_cast<cudaStream_t>(current_context(Device::CUDA).stream()); }

// `stream` itself, or the current context's stream for nullptr (never the legacy default stream).
inline cudaStream_t stream_or_current(void* stream) {
  return stream ? static_cast<cudaStream_t>(stream) : current_stream();
}

}  // namespace dattn::cuda
