#pragma once
// Puts the NaN that SAGE_ATTN's quantization took out of q, k and v back into the output
// (docs/backend-semantics.md, SAGE_ATTN, "Non-finite inputs"): INT8 and FP8 cannot carry it.
#include "attention/backends/sage_attn/cuda/sage_buffers.h"

namespace dattn::sage::cuda_impl {

// After the attention kernel, on the same `stream` (a cudaStream_t): rows of a (b, kv head) whose valid
// keys held NaN/Inf, and query rows that held it, become NaN; so do the channels whose valid values held
// it; rows of a batch item without a valid key stay zero. One small grid-stride launch that returns at
// once when the quantization pass saw no NaN/Inf (a single flag read): the cost of finite inputs.
void sage_put_back_nonfinite(const SageBuffers& buffers, void* out, bool fp16, void* stream);

}  // namespace dattn::sage::cuda_impl
