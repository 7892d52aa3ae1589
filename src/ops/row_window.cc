// copy_into: one block of contiguous rows per batch item.
#include "dattn/ops/row_window.h"

#include <cstring>

#include "dattn/core/stage_timer.h"
#include "ops/checks.h"
#ifdef DATTN_WITH_CUDA
#include "ops/cuda/cuda_ops.h"
#endif

namespace dattn::ops {

void copy_into(const Tensor& y, const RowWindow& window) {
  const StageScope timed("copy_rows");
  constexpr const char* op = "copy_into";
  detail::require_defined(op, "y", y);
  detail::require_window(op, y, y.shape(), window);
  const std::int64_t items = y.dim(0);
  if (y.numel() == 0) return;
  const std::size_t item_bytes = y.bytes() / static_cast<std::size_t>(items);
  const std::size_t row_bytes = item_bytes / static_cast<std::size_t>(y.dim(1));
  const std::size_t out_item_bytes = row_bytes * static_cast<std::size_t>(window.out.dim(1));
  Tensor out = window.out;  // a handle to the caller's storage
  auto* dst = static_cast<std::uint8_t*>(out.data()) + row_bytes * static_cast<std::size_t>(window.row);
  const auto* src = static_cast<const std::uint8_t*>(y.data());
  switch (y.device()) {
    case Device::CPU:
      for (std::int64_t b = 0; b < items; ++b)
        std::memcpy(dst + b * out_item_bytes, src + b * item_bytes, item_bytes);
      return;
    case Device::CUDA:
#ifdef DATTN_WITH_CUDA
      return cuda::copy_item_blocks(dst, out_item_bytes, src, item_bytes, items);
#else
      break;
#endif
  }
  detail::no_kernel(op, y.device());
}

}  // namespace dattn::ops
