#pragma once
// SAGE_ATTN on Hopper (sm_90a): the INT8/FP8 wgmma kernel (sage_hopper_kernel.cuh). Plain C++ header.
#include "attention/backends/sage_attn/cuda/sage_buffers.h"
#include "dattn/attention/problem.h"

namespace dattn::sage::cuda_impl {

// Whether the Hopper kernel can run `problem` on the current device: compute capability 9.x, head dim
// 64 or 128, key padding by lengths (a boolean key mask goes to the portable kernel), 16-byte aligned
// output.
bool sage_hopper_supports(const AttentionProblem& problem);

// Reads the quantized buffers, writes problem.out. Asynchronous on problem.stream.
void sage_attend_hopper(const SageBuffers& buffers, const AttentionProblem& problem);

}  // namespace dattn::sage::cuda_impl
