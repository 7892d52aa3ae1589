#pragma once
// TORCH_SDPA's GEMM kernel on CUDA: the same function as the row kernel (sdpa_cuda.cu) with the two
// matrix products on cuBLASLt. Per (batch item, chunk of heads and query rows): scores = scale * q kᵀ
// in fp32 (exact products, fp32 sums), a softmax kernel adds the mask and normalises each row in
// fp32, then out = P · v in fp32 and one rounding to the input dtype. Plain C++ header.
#include <cstdint>
#include <string>

#include "dattn/attention/problem.h"

namespace dattn::sdpa {

// Empty when the GEMM kernel takes the problem (fp32, bf16 or fp16; a row of Sk fp32 scores within
// the scratch budget; cuBLASLt has algorithms for its GEMMs at the pointers' alignments), else why not.
std::string sdpa_gemm_refusal(const AttentionProblem& problem);

// Runs the problem on `stream` (a cudaStream_t) without waiting. Every output row is written except
// the rows this kernel does not compute exactly the row kernel's way, which it marks with 1 in
// `row_kernel_rows` (device [B, Hq, Sq] bytes, zeroed by the caller): a NaN or +Inf score among the
// row's keys, or a non-finite value under a key the row sees. `key_lengths` is the device copy of
// problem.key_lengths (null when there are none).
void sdpa_gemm_attention(const AttentionProblem& problem, const std::int64_t* key_lengths,
                         std::uint8_t* row_kernel_rows, void* stream);

}  // namespace dattn::sdpa
