#pragma once
// SAGE_ATTN's CUDA entry point for code that builds with and without CUDA (tests, benchmarks): the
// kernel choice and calls that throw UserError in a build without CUDA.
#include "dattn/attention/problem.h"

namespace dattn::sage {

enum class SageKernel { Auto, Portable, Hopper };

// sage_attention_cuda(problem, kernel) (cuda/sage_cuda.h); a build without CUDA throws.
void sage_attention_cuda_entry(const AttentionProblem& problem, SageKernel kernel);
// Only the quantization pass (for the benchmark's share of time); a build without CUDA throws.
void sage_quantize_only_cuda_entry(const AttentionProblem& problem);

}  // namespace dattn::sage
