#pragma once
// SAGE_ATTN on the CPU: steps 4, 6 and 7 of docs/backend-semantics.md (SAGE_ATTN) on top of the
// quantization steps in sage_quant.h, and the driver that runs a whole AttentionProblem.
#include <cstdint>
#include <vector>

#include "attention/backends/sage_attn/sage_quant.h"
#include "dattn/attention/problem.h"

namespace dattn::sage {

// K and V of one (batch item, kv head), quantized once and shared by the query heads of its group.
struct PreparedKV {
  KeyValid valid;                 // per key, or empty when every key is valid
  Int8Blocks k;                   // smoothed K, one scale per kKBlock keys
  std::vector<std::int16_t> k_wide;  // k.data widened, for a faster int dot product on the CPU
  Fp8Channels v;                  // V in e4m3, one scale per channel
  std::vector<float> v_decoded;   // e4m3_to_f32 of v.data, [n, d]: what P.V multiplies
};

// Steps 1, 3 (K) and 5. k [n, d] is smoothed in place; v [n, d] is read.
PreparedKV prepare_kv(float* k, const float* v, std::int64_t n, std::int64_t d, KeyValid valid);

// Steps 2 and 3 (Q). q [rows, d] is scaled in place, then quantized with one scale per kQBlock rows.
Int8Blocks prepare_q(float* q, std::int64_t rows, std::int64_t d, float softmax_scale);

// Steps 4, 6 and 7 for query rows [r0, r1) of q: writes (r1 - r0) * d fp32 values to out, before the
// final rounding to the output dtype. A row with no valid key gives zeros.
void attend_rows(const Int8Blocks& q, std::int64_t r0, std::int64_t r1, const PreparedKV& kv, float* out);

// Runs a validated problem (bf16/fp16, any head dim, key padding, GQA) and writes problem.out.
void sage_attention_cpu(const AttentionProblem& problem);

}  // namespace dattn::sage
