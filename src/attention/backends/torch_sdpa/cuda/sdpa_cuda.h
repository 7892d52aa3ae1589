#pragma once
// TORCH_SDPA on CUDA: plain scaled dot-product attention, the conservative debugging fallback.
// Plain C++ header (no CUDA includes) so that the backend's .cc can call it.
#include "dattn/attention/problem.h"

namespace dattn::sdpa {

// Which CUDA kernel runs a problem (the backend's `kernel` extra). Gemm: the products on cuBLASLt
// (sdpa_gemm.h), with the row kernel for the rows it leaves (non-finite scores or values); Rows: one
// warp per query row, nothing materialised; Auto: Gemm wherever it takes the problem, else Rows. Gemm
// for a problem it cannot take is a UserError, never a silent switch.
enum class SdpaKernel { Auto, Gemm, Rows };

// out = softmax(scale * q k^T + mask) v per (b, h) on the GPU: the same function as
// sdpa_attention_cpu. Every data pointer of `problem` is device memory; key_lengths stays on the host
// (uploaded here, stream-ordered). Dtypes fp32, bf16, fp16; any head dim; key padding, boolean or
// additive general masks [B, 1 or Hq, Sq, Sk], GQA. Scores, softmax and P.V in fp32; the result is
// rounded once (to nearest even) to the input dtype. Rows with no valid key are exact zeros.
// Runs on problem.stream and returns without synchronising; launch errors throw.
void sdpa_attention_cuda(const AttentionProblem& problem, SdpaKernel kernel = SdpaKernel::Auto);

}  // namespace dattn::sdpa
