#pragma once
// FLASH_ATTN on CUDA (sm_80+): the FlashAttention-2 forward kernel (mma.sync, cp.async), for host code
// that must not include CUDA headers. Compiled only in CUDA builds (flash_fwd_launch.cu).
#include "dattn/attention/backend.h"
#include "dattn/attention/problem.h"

namespace dattn::flash {

// Whether the CUDA kernel runs `shape` on a device of `compute_capability` (major*10+minor): bf16/fp16,
// head dim 32, 64 or 128, no general mask, compute capability 8.0 or newer. Key padding (lengths or a
// boolean key mask) and grouped-query attention are supported, any Sq and Sk.
Support flash_cuda_supports(const AttentionShape& shape, int compute_capability);

// Runs a validated problem whose shape flash_cuda_supports accepted; q/k/v/out (and key_mask) are device
// memory, the launch is asynchronous on problem.stream. Throws std::runtime_error on a CUDA failure.
void flash_attention_cuda(const AttentionProblem& problem);

}  // namespace dattn::flash
