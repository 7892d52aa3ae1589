// Dispatch of count_nonfinite (see finite.h).
#include "dattn/ops/finite.h"

#include <string>

#include "dattn/core/error.h"
#include "ops/checks.h"
#include "ops/cpu/finite_cpu.h"
#ifdef DATTN_WITH_CUDA
#include "ops/cuda/finite_cuda.h"
#endif

namespace dattn::ops {

NonFinite count_nonfinite(const Tensor& x) {
  constexpr const char* op = "count_nonfinite";
  detail::require_defined(op, "x", x);
  if (x.dtype() != DType::F32 && x.dtype() != DType::BF16 && x.dtype() != DType::F16 && x.dtype() != DType::F64)
    throw UserError(std::string(op) + ": " + x.describe() + ": expected fp32, bf16, fp16 or fp64");
  switch (x.device()) {
    case Device::CPU: return cpu::count_nonfinite(x);
    case Device::CUDA:
#ifdef DATTN_WITH_CUDA
      return cuda::count_nonfinite(x);
#else
      break;
#endif
  }
  detail::no_kernel(op, x.device());
}

}  // namespace dattn::ops
