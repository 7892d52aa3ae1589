#pragma once
// The float64 reference: TORCH_SDPA's math carried out in double from the inputs' exact values.
// Tests and `dattn attention` measure every backend against it.
#include <vector>

#include "dattn/attention/problem.h"

namespace dattn {

// out64 receives B*Sq*Hq*D doubles in BSHD layout; problem.out is not touched. Honors scale, GQA, key
// padding, causal and general masks; rows with no valid key are zero. Non-finite inputs propagate as in torch's
// math: a NaN score (a NaN in the query row, or in a key it attends to) makes the row NaN, a NaN in the
// value of a key it attends to makes that channel NaN; masked keys take no part, whatever they hold.
void attention_reference_f64(const AttentionProblem& problem, std::vector<double>& out64);

}  // namespace dattn
