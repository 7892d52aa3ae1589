#pragma once
// SPARSE_BLOCK's CUDA entry points for code that builds with and without CUDA (tests, benchmarks):
// each throws UserError in a build without CUDA.
#include <memory>

#include "attention/backends/sparse_block/block_mask.h"
#include "dattn/attention/problem.h"

namespace dattn::sparse {

enum class SparseKernel { Auto, Portable, Hopper };

// Exact attention restricted to the kept key blocks of `mask` (host memory; any order within a row),
// problem on the device. Rows without a kept block (or without a valid key in them) get zeros.
void sparse_attention_cuda_entry(const AttentionProblem& problem, const BlockMask& mask, SparseKernel kernel);

// The mask estimated on the GPU, copied back to the host with each row in mask order (as the CPU
// estimate_block_mask returns it).
BlockMask estimate_block_mask_cuda_entry(const AttentionProblem& problem, const BlockMaskOptions& options);

// The GPU estimation alone, result discarded (for the benchmark's share of time); asynchronous.
void estimate_block_mask_only_cuda_entry(const AttentionProblem& problem, const BlockMaskOptions& options);

// A mask estimated once on the GPU and kept there, so that a benchmark can time the attention alone.
class HeldDeviceMask {
 public:
  HeldDeviceMask(const AttentionProblem& problem, const BlockMaskOptions& options);
  // The attention over the held mask's kept blocks (problem of the same shape); asynchronous.
  void attend(const AttentionProblem& problem) const;

 private:
  std::shared_ptr<void> mask_;  // a DeviceBlockMask in CUDA builds
};

}  // namespace dattn::sparse
