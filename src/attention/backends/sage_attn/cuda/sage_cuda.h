#pragma once
// SAGE_ATTN on CUDA: the quantization pass (sage_quant.cu), then the attention kernel: the Hopper
// INT8/FP8 wgmma kernel where it runs (hopper/), else the portable kernel. Plain C++ header for host code.
//
// DATTN_SAGE_KERNEL (read once per process): "portable" never uses the Hopper kernel, "hopper" requires
// it (a problem it cannot run throws), unset or "auto": the Hopper kernel wherever it runs.
#include "attention/backends/sage_attn/cuda_entry.h"  // SageKernel
#include "dattn/attention/backend.h"
#include "dattn/attention/problem.h"

namespace dattn::sage {

// The choice DATTN_SAGE_KERNEL makes (UserError on any other value).
SageKernel sage_kernel_from_env();

// Whether SAGE_ATTN runs `shape` on a device of `compute_capability` (major*10+minor): 8.0 or newer,
// bf16/fp16, head dim 64 or 128, no general mask, sizes within the kernels' int32 indexing.
Support sage_cuda_supports(const AttentionShape& shape, int compute_capability);

// Runs a validated problem (device pointers, asynchronous on problem.stream) with `kernel`.
void sage_attention_cuda(const AttentionProblem& problem, SageKernel kernel);
inline void sage_attention_cuda(const AttentionProblem& problem) {
  sage_attention_cuda(problem, sage_kernel_from_env());
}

// Only the quantization pass, into a workspace allocated and freed here (for benchmarks: its share of
// the time).
void sage_quantize_only_cuda(const AttentionProblem& problem);
// The quantization pass, its buffers copied to the host (waits for the stream): for tests.
SageQuantized sage_quantize_download_cuda(const AttentionProblem& problem);

}  // namespace dattn::sage
