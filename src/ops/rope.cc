// Dispatch of the interleaved rotary embedding.
#include "dattn/ops/rope.h"

#include <string>
#include <utility>

#include "dattn/core/error.h"
#include "dattn/core/stage_timer.h"
#include "ops/checks.h"
#include "ops/cpu/cpu_ops.h"
#ifdef DATTN_WITH_CUDA
#include "ops/cuda/cuda_ops.h"
#endif

namespace dattn::ops {

namespace {

void check_rope_args(const char* op, const Tensor& x, const Tensor& cos, const Tensor& sin) {
  detail::require_float(op, "x", x);
  detail::require_ndim(op, "x", x, 4, "[B, S, H, D]");
  if (x.dim(3) % 2 != 0) throw UserError(std::string(op) + ": x " + x.describe() + ": head dim must be even");
  for (const auto& [name, t] : {std::pair{"cos", &cos}, std::pair{"sin", &sin}}) {
    detail::require_defined(op, name, *t);
    detail::require_shape(op, name, *t, {x.dim(1), x.dim(3)});
    if (t->dtype() != DType::F32) throw UserError(std::string(op) + ": " + name + " " + t->describe() + ": expected fp32");
    detail::require_same_device(op, x, name, *t);
  }
}

}  // namespace

Tensor apply_rope_interleaved(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  const StageScope timed("rope");
  constexpr const char* op = "apply_rope_interleaved";
  check_rope_args(op, x, cos, sin);
  switch (x.device()) {
    case Device::CPU: return cpu::apply_rope_interleaved(x, cos, sin);
    case Device::CUDA:
#ifdef DATTN_WITH_CUDA
      return cuda::apply_rope_interleaved(x, cos, sin);
#else
      break;
#endif
  }
  detail::no_kernel(op, x.device());
}

Tensor apply_rope_rotate_half(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  const StageScope timed("rope");
  constexpr const char* op = "apply_rope_rotate_half";
  check_rope_args(op, x, cos, sin);
  switch (x.device()) {
    case Device::CPU: return cpu::apply_rope_rotate_half(x, cos, sin);
    case Device::CUDA:
#ifdef DATTN_WITH_CUDA
      return cuda::apply_rope_rotate_half(x, cos, sin);
#else
      break;
#endif
  }
  detail::no_kernel(op, x.device());
}

}  // namespace dattn::ops
