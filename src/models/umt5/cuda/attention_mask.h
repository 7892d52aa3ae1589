#pragma once
// umT5's additive attention mask built on the GPU (see models/umt5/position_bias.h). Plain C++: the
// encoder includes this without the CUDA toolkit; only attention_mask.cu sees it.
#include <cstdint>

namespace dattn::umt5::cuda {

// out[b, h, i, j] = table[buckets[i * seq + j] * heads + h], plus float32's lowest value where
// key_valid[b * seq + j] == 0. Every pointer is device memory: out float32 [batch, heads, seq, seq],
// table float32 [num_buckets, heads], buckets int32 [seq * seq], key_valid uint8 [batch * seq].
// Asynchronous on the current run context's stream, like the ops (launch errors throw at once).
void build_attention_mask(float* out, const float* table, const std::int32_t* buckets,
                          const std::uint8_t* key_valid, std::int64_t batch, std::int64_t heads, std::int64_t seq);

}  // namespace dattn::umt5::cuda
