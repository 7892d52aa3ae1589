#pragma once
// Plain scaled dot-product attention on the CPU: the conservative reference every other backend is
// compared with. Scores are materialised per query row in fp32; no tiling, no approximation.
#include "dattn/attention/problem.h"

namespace dattn::sdpa {

// out = softmax(scale * q k^T + mask) v per (b, h): key padding hides keys, a boolean general mask
// hides keys where it is 0, an additive one is added to the scaled scores. Rows whose every key is
// hidden (max score -inf) get zeros. Inputs fp32, bf16, fp16 or fp64, converted exactly to fp32; the fp32
// result is rounded once to the input dtype. Parallel (OpenMP) over batch x heads.
void sdpa_attention_cpu(const AttentionProblem& problem);

}  // namespace dattn::sdpa
