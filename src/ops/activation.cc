// Dispatch of the activations.
#include "dattn/ops/activation.h"

#include "dattn/core/stage_timer.h"

#include "ops/checks.h"
#include "ops/cpu/cpu_ops.h"
#ifdef DATTN_WITH_CUDA
#include "ops/cuda/cuda_ops.h"
#endif

namespace dattn::ops {

Tensor gelu_tanh(const Tensor& x) {
  const StageScope timed("gelu_tanh");
  detail::require_float("gelu_tanh", "x", x);
  switch (x.device()) {
    case Device::CPU: return cpu::gelu_tanh(x);
    case Device::CUDA:
#ifdef DATTN_WITH_CUDA
      return cuda::gelu_tanh(x);
#else
      break;
#endif
  }
  detail::no_kernel("gelu_tanh", x.device());
}

Tensor gelu(const Tensor& x) {
  const StageScope timed("gelu");
  detail::require_float("gelu", "x", x);
  switch (x.device()) {
    case Device::CPU: return cpu::gelu(x);
    case Device::CUDA:
#ifdef DATTN_WITH_CUDA
      return cuda::gelu(x);
#else
      break;
#endif
  }
  detail::no_kernel("gelu", x.device());
}

Tensor silu(const Tensor& x) {
  const StageScope timed("silu");
  detail::require_float("silu", "x", x);
  switch (x.device()) {
    case Device::CPU: return cpu::silu(x);
    case Device::CUDA:
#ifdef DATTN_WITH_CUDA
      return cuda::silu(x);
#else
      break;
#endif
  }
  detail::no_kernel("silu", x.device());
}

}  // namespace dattn::ops
