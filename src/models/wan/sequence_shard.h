#pragma once
// Ulysses' sequence shards of the Wan transformer: each rank of the group runs tokens
// [rank * S/P, (rank + 1) * S/P) of every batch item, and the shards are put back together at the end.
#include <cstdint>
#include <vector>

#include "dattn/core/tensor.h"
#include "dattn/parallel/communicator.h"
#include "models/wan/rope_tables.h"

namespace dattn::wan {

struct TokenRange {
  std::int64_t start = 0, length = 0;
};

// This rank's tokens of S. UserError when S does not divide by the group's size.
TokenRange token_shard(const parallel::Communicator& group, std::int64_t tokens);

// Tokens [start, start + length) of x [B, S, D] (a copy on x's device).
Tensor slice_tokens(const Tensor& x, TokenRange range);
// The tables' rows of the range (views, no copy).
RopeTables slice_rope(const RopeTables& rope, TokenRange range);
// The rows of row_of_token (B * S entries) that belong to the range of each batch item.
std::vector<std::int32_t> slice_rows(const std::vector<std::int32_t>& row_of_token, std::int64_t batch,
                                     std::int64_t tokens, TokenRange range);
// Every rank's x [B, S/P, C], in rank order along the tokens: [B, S, C] on x's device.
Tensor gather_tokens(parallel::Communicator& group, const Tensor& local);

}  // namespace dattn::wan
