#pragma once
// SAGE_ATTN's CUDA entry point for code that builds with and without CUDA (tests, benchmarks): the
// kernel choice and calls that throw UserError in a build without CUDA.
#include <cstdint>
#include <vector>

#include "attention/kernels/kernel_choice.h"
#include "dattn/attention/problem.h"

namespace dattn::sage {

using SageKernel = KernelChoice;  // the backend's `kernel` extra

// sage_attention_cuda(problem, kernel) (cuda/sage_cuda.h); a build without CUDA throws.
void sage_attention_cuda_entry(const AttentionProblem& problem, SageKernel kernel);
// Only the quantization pass (for the benchmark's share of time); a build without CUDA throws.
void sage_quantize_only_cuda_entry(const AttentionProblem& problem);

// The quantization pass's output copied to the host, in the layouts of cuda/sage_buffers.h, so that
// tests can check it against the CPU steps of sage_quant.h. A build without CUDA throws.
struct SageQuantized {
  int seq_q_pad = 0, seq_k_pad = 0;
  std::vector<std::int8_t> q8;       // [B * Hq][Sq_pad][D]
  std::vector<float> q_scale;        // [B * Hq][Sq_pad / 16]
  std::vector<std::int8_t> k8;       // [B * Hkv][Sk_pad][D]
  std::vector<float> k_scale;        // [B * Hkv][Sk_pad / 64]
  std::vector<std::uint8_t> v8t;     // [B * Hkv][D][Sk_pad], keys permuted within groups of 16
  std::vector<float> v_scale;        // [B * Hkv][D]
};
SageQuantized sage_quantize_download_cuda_entry(const AttentionProblem& problem);

}  // namespace dattn::sage
