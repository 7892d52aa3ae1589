#pragma once
// Internal to ops::CausalConv3d (conv.cc), visible to its tests: a weight packed for a device.
#include "dattn/core/tensor.h"

namespace dattn::ops::detail {

// weight [cout, cin, kt, k, k] or [cout, cin, k, k] (any float dtype, any device) -> [cout, kt, k, k, cin]
// float32 on `device`. A host fp32/bf16/fp16 weight for CUDA is uploaded as stored and packed by a
// kernel; everything else is packed on the host (and copied to `device`). Both give the same bits.
Tensor packed_conv_weight(const Tensor& weight, Device device);

}  // namespace dattn::ops::detail
