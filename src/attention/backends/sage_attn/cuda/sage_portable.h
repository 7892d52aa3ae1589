#pragma once
// SAGE_ATTN's attention steps on any CUDA GPU (sage_portable.cu): the plain kernel that mirrors the CPU
// code, used where the Hopper kernel does not run and as its same-input reference in tests.
#include "attention/backends/sage_attn/cuda/sage_buffers.h"

namespace dattn::sage::cuda_impl {

// Reads the quantized buffers, writes out [B, Sq, Hq, D] (bf16, or fp16 when `fp16`). Asynchronous on
// `stream` (a cudaStream_t).
void sage_attend_portable(const SageBuffers& buffers, void* out, bool fp16, void* stream);

}  // namespace dattn::sage::cuda_impl
