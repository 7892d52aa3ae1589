#pragma once
// One call of an attention layer on [B, S, H, D] tensors, with the first counts[b] keys of item b valid
// (no mask when every key is).
#include <cstdint>
#include <vector>

#include "dattn/attention/layer.h"
#include "dattn/core/tensor.h"

namespace dattn::hv15 {

Tensor attend(const AttentionLayer& layer, const Tensor& q, const Tensor& k, const Tensor& v,
              const std::vector<std::int64_t>& valid_keys);

}  // namespace dattn::hv15
