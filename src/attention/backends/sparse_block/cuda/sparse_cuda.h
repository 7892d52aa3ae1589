#pragma once
// SPARSE_BLOCK on CUDA, for host code that must not include CUDA headers: the support predicate, the
// attention over kept key blocks (Hopper wgmma/TMA kernel where it runs the problem, else the portable
// sm_80 kernel) and the whole backend step (mask estimation on the GPU, then the attention).
#include "attention/backends/sparse_block/block_mask.h"
#include "attention/kernels/device_key_blocks.h"
#include "attention/backends/sparse_block/cuda_entry.h"
#include "dattn/attention/backend.h"

namespace dattn::sparse {

// Whether some CUDA kernel runs `shape` on a device of compute capability `cc` (major*10+minor).
Support sparse_cuda_supports(const AttentionShape& shape, int cc);

// Exact attention over the kept key blocks; device memory, asynchronous on problem.stream.
// SparseKernel::Hopper on a problem the Hopper kernel cannot run throws UserError.
void sparse_attention_cuda(const AttentionProblem& problem, const DeviceKeyBlocks& blocks,
                           SparseKernel kernel = SparseKernel::Auto);

// The backend's CUDA step: estimate the mask on the GPU, then attend. Asynchronous on problem.stream.
void sparse_block_cuda(const AttentionProblem& problem, const BlockMaskOptions& options);

}  // namespace dattn::sparse
