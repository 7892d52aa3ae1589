#pragma once
// umT5's relative position bias and key mask, folded into the additive mask the attention backend adds
// to the (unscaled) scores.
#include <cstdint>
#include <vector>

#include "dattn/core/tensor.h"

namespace dattn::umt5 {

// Bidirectional T5 bucket of every (query i, key j) pair, relative position j - i: [seq_q * seq_k].
// Half of the buckets are for keys after the query; in each half, distances below a quarter of
// num_buckets are exact and larger ones share logarithmic bins up to max_distance.
std::vector<std::int32_t> relative_buckets(std::int64_t seq_q, std::int64_t seq_k, std::int64_t num_buckets,
                                           std::int64_t max_distance);

// mask[b, h, i, j] = table[bucket(i, j), h], plus float32's lowest value where key j of row b is
// padding (transformers adds finfo.min; it also makes a row without valid keys average every key, as
// transformers does). table: host float32 [num_buckets, heads]. Returns float32 [B, H, S, S] on `device`.
Tensor attention_mask(const Tensor& table, const std::vector<std::int32_t>& buckets,
                      const std::vector<std::int64_t>& key_mask, std::int64_t batch, std::int64_t seq,
                      Device device);

}  // namespace dattn::umt5
