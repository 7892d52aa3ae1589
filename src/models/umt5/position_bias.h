#pragma once
// umT5's relative position bias and key mask, folded into the additive mask the attention backend adds
// to the (unscaled) scores.
#include <cstdint>
#include <vector>

#include "dattn/core/device_memory.h"
#include "dattn/core/tensor.h"

namespace dattn::umt5 {

// Bidirectional T5 bucket of every (query i, key j) pair, relative position j - i: [seq_q * seq_k].
// Half of the buckets are for keys after the query; in each half, distances below a quarter of
// num_buckets are exact and larger ones share logarithmic bins up to max_distance.
std::vector<std::int32_t> relative_buckets(std::int64_t seq_q, std::int64_t seq_k, std::int64_t num_buckets,
                                           std::int64_t max_distance);

// mask[b, h, i, j] = table[bucket(i, j), h], plus float32's lowest value where key j of row b is
// padding (transformers adds finfo.min; it also makes a row without valid keys average every key, as
// transformers does). table: host float32 [num_buckets, heads]. Returns float32 [B, H, S, S] on `device`
// (built on the host, then copied).
Tensor attention_mask(const Tensor& table, const std::vector<std::int32_t>& buckets,
                      const std::vector<std::int64_t>& key_mask, std::int64_t batch, std::int64_t seq,
                      Device device);

// The mask of every layer of one encode call. What the layers share (the bucket of every (i, j) and
// each key's validity) is computed once on the host and, on CUDA, uploaded once; each layer's mask is
// then built where its bias table lives: on the host by attention_mask above, on CUDA by one kernel
// (cuda/attention_mask.cu), so no [B, H, S, S] tensor crosses PCIe.
class AttentionMasks {
 public:
  AttentionMasks(const std::vector<std::int64_t>& key_mask, std::int64_t batch, std::int64_t seq,
                 std::int64_t num_buckets, std::int64_t max_distance, Device device);
  // table: float32 [num_buckets, heads] on the device given above. Returns float32 [B, H, S, S] there.
  Tensor for_layer(const Tensor& table) const;

 private:
  std::int64_t batch_, seq_;
  Device device_;
  std::vector<std::int32_t> buckets_;   // host, [S * S]
  std::vector<std::int64_t> key_mask_;  // host, [B * S]
  DeviceBuffer buckets_dev_;            // CUDA only: int32 [S * S]
  DeviceBuffer valid_dev_;              // CUDA only: uint8 [B * S], 1 = a real token
};

}  // namespace dattn::umt5
