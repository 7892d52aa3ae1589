#pragma once
// FLASH_ATTN on CUDA (sm_80+): the FlashAttention-2 forward kernel (mma.sync, cp.async), for host code
// that must not include CUDA headers. Compiled only in CUDA builds (flash_fwd_launch.cu).
#include "attention/kernels/device_key_blocks.h"
#include "attention/kernels/kernel_choice.h"
#include "dattn/attention/backend.h"
#include "dattn/attention/problem.h"

namespace dattn::flash {

// Whether the CUDA kernel runs `shape` on a device of `compute_capability` (major*10+minor): bf16/fp16,
// head dim 32, 64 or 128, no general mask, compute capability 8.0 or newer. Key padding (lengths or a
// boolean key mask), causal (with or without key padding, Sq == Sk) and grouped-query attention are
// supported, any Sq and Sk.
Support flash_cuda_supports(const AttentionShape& shape, int compute_capability);

// Runs a validated problem whose shape flash_cuda_supports accepted; q/k/v/out (and key_mask) are device
// memory, the launch is asynchronous on problem.stream (nullptr: the current context's). `kernel` is the
// backend's `kernel` extra (kernel_choice.h). Throws std::runtime_error on a CUDA failure.
void flash_attention_cuda(const AttentionProblem& problem, KernelChoice kernel = KernelChoice::Auto);

// SPARSE_BLOCK on the portable kernel: whether it runs `shape` with blocks of `block_size` rows/keys
// (64 or 128; otherwise as flash_cuda_supports).
Support flash_cuda_sparse_supports(const AttentionShape& shape, int compute_capability, int block_size);

// Exact attention over the valid keys of each query block's kept key blocks, visited in ascending order
// (one online-softmax step per key tile, as the portable FLASH_ATTN kernel takes them: with every block
// kept the result is that kernel's, bit for bit). Rows with no kept block or no valid key get zeros.
// Always the portable sm_80 kernel, never the Hopper one. `blocks` is in device memory and must match
// the shape (block_size 64 or 128, query_blocks = ceil(Sq / bs), key_blocks = ceil(Sk / bs));
// asynchronous on problem.stream.
void flash_attention_cuda_sparse(const AttentionProblem& problem, const sparse::DeviceKeyBlocks& blocks);

}  // namespace dattn::flash
