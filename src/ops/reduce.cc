// Dispatch of the token reductions.
#include "dattn/ops/reduce.h"

#include <string>

#include "dattn/core/error.h"
#include "dattn/core/stage_timer.h"
#include "ops/checks.h"
#include "ops/cpu/cpu_ops.h"
#ifdef DATTN_WITH_CUDA
#include "ops/cuda/cuda_ops.h"
#endif

namespace dattn::ops {

Tensor mean_rows(const Tensor& x, const std::vector<std::int64_t>& counts) {
  const StageScope timed("mean_rows");
  detail::require_float("mean_rows", "x", x);
  detail::require_ndim("mean_rows", "x", x, 3, "[B, N, D]");
  if (static_cast<std::int64_t>(counts.size()) != x.dim(0))
    throw UserError("mean_rows: " + std::to_string(counts.size()) + " counts for x " + x.describe() +
                    ": expected one per batch item");
  for (std::int64_t c : counts)
    if (c < 1 || c > x.dim(1))
      throw UserError("mean_rows: count " + std::to_string(c) + " for x " + x.describe() + ": expected 1.." +
                      std::to_string(x.dim(1)));
  switch (x.device()) {
    case Device::CPU: return cpu::mean_rows(x, counts);
    case Device::CUDA:
#ifdef DATTN_WITH_CUDA
      return cuda::mean_rows(x, counts);
#else
      break;
#endif
  }
  detail::no_kernel("mean_rows", x.device());
}

}  // namespace dattn::ops
