// Relative position buckets and the additive attention mask (see position_bias.h).
#include "models/umt5/position_bias.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace dattn::umt5 {

std::vector<std::int32_t> relative_buckets(std::int64_t seq_q, std::int64_t seq_k, std::int64_t num_buckets,
                                           std::int64_t max_distance) {
  const std::int64_t half = num_buckets / 2;  // buckets per direction
  const std::int64_t exact = half / 2;
  // transformers does the log step in float32 and truncates; the same float32 steps keep the bins of
  // distances that sit exactly on a bin edge (16, 32, 64 for the standard 32 / 128) identical.
  const float log_range = static_cast<float>(std::log(static_cast<double>(max_distance) / exact));
  const float log_bins = static_cast<float>(half - exact);
  std::vector<std::int32_t> out(seq_q * seq_k);
  for (std::int64_t i = 0; i < seq_q; ++i) {
    for (std::int64_t j = 0; j < seq_k; ++j) {
      const std::int64_t rel = j - i;
      const std::int64_t dist = std::llabs(rel);
      std::int64_t bucket = rel > 0 ? half : 0;
      if (dist < exact) {
        bucket += dist;
      } else {
        const float ratio = std::log(static_cast<float>(dist) / static_cast<float>(exact)) / log_range * log_bins;
        bucket += std::min(exact + static_cast<std::int64_t>(ratio), half - 1);
      }
      out[i * seq_k + j] = static_cast<std::int32_t>(bucket);
    }
  }
  return out;
}

Tensor attention_mask(const Tensor& table, const std::vector<std::int32_t>& buckets,
                      const std::vector<std::int64_t>& key_mask, std::int64_t batch, std::int64_t seq,
                      Device device) {
  const std::int64_t heads = table.dim(1);
  const float* t = table.data_as<float>();
  Tensor mask = Tensor::empty({batch, heads, seq, seq}, DType::F32);
  float* m = mask.data_as<float>();
  constexpr float kHidden = std::numeric_limits<float>::lowest();
#pragma omp parallel for collapse(2) schedule(static)
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t h = 0; h < heads; ++h) {
      const std::int64_t* valid = key_mask.data() + b * seq;
      float* plane = m + (b * heads + h) * seq * seq;
      for (std::int64_t i = 0; i < seq; ++i)
        for (std::int64_t j = 0; j < seq; ++j) {
          const float bias = t[buckets[i * seq + j] * heads + h];
          // bias + lowest rounds to lowest, as in transformers' position_bias + attention_mask.
          plane[i * seq + j] = valid[j] != 0 ? bias : bias + kHidden;
        }
    }
  }
  return mask.to(device);
}

}  // namespace dattn::umt5
