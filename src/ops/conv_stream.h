#pragma once
// Internal to ops::CausalConv3d (conv.cc, conv_replicate.cc): the frame cache's next tail.
#include <cstdint>

#include "dattn/core/tensor.h"

namespace dattn::ops::detail {

// The last `keep` frames of the stream [tail; x] (tail may be undefined), copied into a new tensor on x's
// device.
Tensor conv_stream_tail(const Tensor& tail, const Tensor& x, std::int64_t keep);

}  // namespace dattn::ops::detail
