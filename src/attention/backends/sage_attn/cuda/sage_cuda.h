#pragma once
// SAGE_ATTN on CUDA: the quantization pass (sage_quant.cu), then the attention kernel: the Hopper
// INT8/FP8 wgmma kernel where it runs (hopper/), else the portable kernel. Plain C++ header for host code.
// The backend's `kernel` extra (kernel_choice.h) picks between them.
#include "attention/backends/sage_attn/cuda_entry.h"  // SageKernel
#include "dattn/attention/backend.h"
#include "dattn/attention/problem.h"

namespace dattn::sage {

// Whether SAGE_ATTN runs `shape` on a device of `compute_capability` (major*10+minor): 8.0 or newer,
// bf16/fp16, head dim 64 or 128, no general mask, sizes within the kernels' int32 indexing.
Support sage_cuda_supports(const AttentionShape& shape, int compute_capability);

// Runs a validated problem (device pointers, asynchronous on problem.stream, nullptr: the current
// context's) with `kernel`.
void sage_attention_cuda(const AttentionProblem& problem, SageKernel kernel);

// Only the quantization pass, into a workspace allocated and freed here (for benchmarks: its share of
// the time).
void sage_quantize_only_cuda(const AttentionProblem& problem);
// The quantization pass, its buffers copied to the host (waits for the stream): for tests.
SageQuantized sage_quantize_download_cuda(const AttentionProblem& problem);

}  // namespace dattn::sage
