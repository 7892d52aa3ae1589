#pragma once
// The nominal shape of one attention call, as the role declarations build it.
#include <cstdint>

#include "dattn/attention/problem.h"

namespace dattn::roles_detail {

inline AttentionShape nominal_shape(std::int64_t seq_q, std::int64_t seq_k, std::int64_t heads, std::int64_t head_dim,
                                    DType dtype, MaskKind mask = MaskKind::None) {
  AttentionShape s;
  s.batch = 1;
  s.seq_q = seq_q;
  s.seq_k = seq_k;
  s.heads_q = s.heads_kv = heads;
  s.head_dim = head_dim;
  s.dtype = dtype;
  s.mask = mask;
  return s;
}

}  // namespace dattn::roles_detail
