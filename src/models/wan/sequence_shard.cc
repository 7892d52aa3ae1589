// Ulysses' sequence shards (see sequence_shard.h).
#include "models/wan/sequence_shard.h"

#include <string>

#include "dattn/core/error.h"
#include "dattn/ops/row_window.h"

namespace dattn::wan {

TokenRange token_shard(const parallel::Communicator& group, std::int64_t tokens) {
  const int ranks = group.size();
  if (tokens % ranks != 0)
    throw UserError("--ulysses-degree " + std::to_string(ranks) + ": the video's " + std::to_string(tokens) +
                    " latent tokens are not a multiple of " + std::to_string(ranks) +
                    "; expected a size and frame count whose token count is");
  return {group.rank() * (tokens / ranks), tokens / ranks};
}

Tensor slice_tokens(const Tensor& x, TokenRange range) { return ops::copy_from({x, range.start}, range.length); }

RopeTables slice_rope(const RopeTables& rope, TokenRange range) {
  return {rope.cos.narrow0(range.start, range.length), rope.sin.narrow0(range.start, range.length)};
}

std::vector<std::int32_t> slice_rows(const std::vector<std::int32_t>& row_of_token, std::int64_t batch,
                                     std::int64_t tokens, TokenRange range) {
  std::vector<std::int32_t> out;
  out.reserve(static_cast<std::size_t>(batch * range.length));
  for (std::int64_t b = 0; b < batch; ++b) {
    const auto first = row_of_token.begin() + b * tokens + range.start;
    out.insert(out.end(), first, first + range.length);
  }
  return out;
}

Tensor gather_tokens(parallel::Communicator& group, const Tensor& local) {
  const std::int64_t b = local.dim(0), s = local.dim(1), c = local.dim(2), ranks = group.size();
  // The gather stacks the ranks first ([P * B, s, C]); each (rank, item) block of s rows moves to item
  // b's rows [rank * s, (rank + 1) * s).
  const Tensor stacked = parallel::all_gather_on_device(group, local).reshape({ranks * b * s, c});
  Tensor out = Tensor::empty({b, ranks * s, c}, local.dtype(), local.device());
  Tensor out_rows = out.reshape({b * ranks * s, c});
  for (std::int64_t r = 0; r < ranks; ++r)
    for (std::int64_t i = 0; i < b; ++i) {
      Tensor dst = out_rows.narrow0((i * ranks + r) * s, s);
      dst.copy_from(stacked.narrow0((r * b + i) * s, s));
    }
  return out;
}

}  // namespace dattn::wan
