// Dispatch of the sinusoidal timestep embedding.
#include "dattn/ops/embedding.h"

#include "dattn/core/error.h"
#include "ops/checks.h"
#include "ops/cpu/cpu_ops.h"
#ifdef DATTN_WITH_CUDA
#include "ops/cuda/cuda_ops.h"
#endif

namespace dattn::ops {

Tensor timestep_embedding(const Tensor& t, const TimestepEmbeddingParams& p) {
  constexpr const char* op = "timestep_embedding";
  detail::require_defined(op, "t", t);
  detail::require_ndim(op, "t", t, 1, "[N]");
  if (p.dim < 1) throw UserError(std::string(op) + ": dim " + std::to_string(p.dim) + ": expected >= 1");
  if (float(p.dim / 2) == p.downscale_freq_shift)
    throw UserError(std::string(op) + ": downscale_freq_shift equals dim/2 (division by zero)");
  switch (t.device()) {
    case Device::CPU: return cpu::timestep_embedding(t, p);
    case Device::CUDA:
#ifdef DATTN_WITH_CUDA
      return cuda::timestep_embedding(t, p);
#else
      break;
#endif
  }
  detail::no_kernel(op, t.device());
}

}  // namespace dattn::ops
