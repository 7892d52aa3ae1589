#pragma once
// The CUDA twin of conv.cc's host weight packing, for weights uploaded as stored (conv_weight_pack.cu).
// Plain C++ header.
#include <cstdint>

#include "dattn/core/dtype.h"

namespace dattn::ops::cuda {

// dst [cout, taps, cin] float32 = src [cout, cin, taps] (dtype F32, BF16 or F16) widened exactly (the
// host's bf16_to_f32 / f16_to_f32, NaN payloads included) and transposed per output channel: the layout
// cuDNN's NDHWC filters and the host packing share. Device pointers, queued on the current context's
// stream. std::logic_error for another dtype.
void pack_conv_weight(const void* src, DType dtype, float* dst, std::int64_t cout, std::int64_t cin,
                      std::int64_t taps);

}  // namespace dattn::ops::cuda
