// Dispatch of transpose2d.
#include "dattn/ops/transpose.h"

#include "dattn/core/stage_timer.h"
#include "ops/checks.h"
#include "ops/cpu/cpu_ops.h"
#ifdef DATTN_WITH_CUDA
#include "ops/cuda/frame_kernels.h"
#endif

namespace dattn::ops {

Tensor transpose2d(const Tensor& x) {
  const StageScope timed("transpose2d");
  constexpr const char* op = "transpose2d";
  detail::require_f32(op, "x", x);
  detail::require_ndim(op, "x", x, 2, "[rows, cols]");
  Tensor y = Tensor::empty({x.dim(1), x.dim(0)}, DType::F32, x.device());
  switch (x.device()) {
    case Device::CPU: cpu::transpose2d(x, y); return y;
    case Device::CUDA:
#ifdef DATTN_WITH_CUDA
      cuda::transpose2d(x.data_as<float>(), y.data_as<float>(), x.dim(0), x.dim(1));
      return y;
#else
      break;
#endif
  }
  detail::no_kernel(op, x.device());
}

}  // namespace dattn::ops
