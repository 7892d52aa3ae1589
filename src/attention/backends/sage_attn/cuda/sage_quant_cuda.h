#pragma once
// SAGE_ATTN's quantization pass on CUDA (steps 1, 2, 3 and 5 of docs/backend-semantics.md, SAGE_ATTN):
// bandwidth-bound kernels that read q, k, v once (k twice: mean, then quantize) and fill a SageBuffers.
#include <cstddef>

#include "attention/backends/sage_attn/cuda/sage_buffers.h"
#include "dattn/attention/problem.h"

namespace dattn::sage::cuda_impl {

// Bytes of scratch memory sage_quantize_cuda needs for `buffers` (channel partial sums and stats).
std::size_t quantize_scratch_bytes(const SageBuffers& buffers);

// Fills every array of `buffers` (allocated by the caller, sizes as documented there) from the problem's
// q, k, v and key padding; `scratch` holds quantize_scratch_bytes. Asynchronous on problem.stream.
void sage_quantize_cuda(const AttentionProblem& problem, const SageBuffers& buffers, void* scratch);

}  // namespace dattn::sage::cuda_impl
