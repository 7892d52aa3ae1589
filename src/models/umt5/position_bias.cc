// Relative position buckets and the additive attention mask (see position_bias.h).
#include "models/umt5/position_bias.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "dattn/core/error.h"
#ifdef DATTN_WITH_CUDA
#include "models/umt5/cuda/attention_mask.h"
#endif

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

AttentionMasks::AttentionMasks(const std::vector<std::int64_t>& key_mask, std::int64_t batch, std::int64_t seq,
                               std::int64_t num_buckets, std::int64_t max_distance, Device device)
    : batch_(batch), seq_(seq), device_(device), buckets_(relative_buckets(seq, seq, num_buckets, max_distance)) {
  if (device == Device::CPU) {
    key_mask_ = key_mask;
    return;
  }
  std::vector<std::uint8_t> valid(key_mask.size());
  for (std::size_t t = 0; t < key_mask.size(); ++t) valid[t] = key_mask[t] != 0 ? 1 : 0;
  buckets_dev_ = DeviceBuffer(buckets_.size() * sizeof(std::int32_t));
  buckets_dev_.upload(buckets_.data(), buckets_.size() * sizeof(std::int32_t));
  valid_dev_ = DeviceBuffer(valid.size());
  valid_dev_.upload(valid.data(), valid.size());
}

Tensor AttentionMasks::for_layer(const Tensor& table) const {
  if (table.device() != device_ || table.dtype() != DType::F32 || table.ndim() != 2)
    throw UserError("umT5 attention mask: bias table " + table.describe() + ", expected float32 [buckets, heads] on " +
                    std::string(device_name(device_)));
  if (device_ == Device::CPU) return attention_mask(table, buckets_, key_mask_, batch_, seq_, Device::CPU);
#ifdef DATTN_WITH_CUDA
  const std::int64_t heads = table.dim(1);
  Tensor mask = Tensor::empty({batch_, heads, seq_, seq_}, DType::F32, Device::CUDA);
  cuda::build_attention_mask(mask.data_as<float>(), table.data_as<float>(),
                             static_cast<const std::int32_t*>(buckets_dev_.get()),
                             static_cast<const std::uint8_t*>(valid_dev_.get()), batch_, heads, seq_);
  return mask;
#else
  throw UserError("umT5 attention mask: this dattn was built without CUDA");
#endif
}

}  // namespace dattn::umt5
