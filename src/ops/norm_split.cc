// Dispatch of the split RMS norm (norm_split.h): CPU and CUDA kernels for the sums and the norm; the
// rotary form is the norm in float32, the rotation, one rounding to x's dtype, on either device.
#include "dattn/ops/norm_split.h"

#include <string>

#include "dattn/core/error.h"
#include "dattn/core/stage_timer.h"
#include "dattn/ops/combine.h"
#include "dattn/ops/rope.h"
#include "ops/checks.h"
#include "ops/cpu/cpu_ops.h"
#ifdef DATTN_WITH_CUDA
#include "ops/cuda/cuda_ops.h"
#endif

namespace dattn::ops {
namespace {

void check_sums(const char* op, const Tensor& x, const Tensor& sums, std::int64_t width, float eps,
                const Tensor& weight) {
  detail::require_float(op, "x", x);
  if (x.ndim() < 1) throw UserError(std::string(op) + ": x " + x.describe() + " has no last dimension");
  detail::require_defined(op, "sums", sums);
  if (sums.dtype() != DType::F64)
    throw UserError(std::string(op) + ": sums " + sums.describe() + ": expected dtype fp64 (sum_squares' result)");
  detail::require_shape(op, "sums", sums, Shape(x.shape().begin(), x.shape().end() - 1));
  detail::require_same_device(op, x, "sums", sums);
  if (width < x.dim(-1))
    throw UserError(std::string(op) + ": width " + std::to_string(width) + " is shorter than x's rows " +
                    x.describe() + "; expected the whole rows' length");
  if (!(eps >= 0)) throw UserError(std::string(op) + ": eps " + std::to_string(eps) + ": expected >= 0");
  if (!weight.defined()) return;
  detail::require_float(op, "weight", weight);
  detail::require_shape(op, "weight", weight, {x.dim(-1)});
  detail::require_same_device(op, x, "weight", weight);
}

}  // namespace

Tensor sum_squares(const Tensor& x) {
  const StageScope timed("sum_squares");
  constexpr const char* op = "sum_squares";
  detail::require_float(op, "x", x);
  if (x.ndim() < 1) throw UserError(std::string(op) + ": x " + x.describe() + " has no last dimension");
  switch (x.device()) {
    case Device::CPU: return cpu::sum_squares(x);
    case Device::CUDA:
#ifdef DATTN_WITH_CUDA
      return cuda::sum_squares(x);
#else
      break;
#endif
  }
  detail::no_kernel(op, x.device());
}

Tensor rms_norm_with_sums(const Tensor& x, const Tensor& sums, std::int64_t width, float eps, const Tensor& weight) {
  const StageScope timed("rms_norm_with_sums");
  constexpr const char* op = "rms_norm_with_sums";
  check_sums(op, x, sums, width, eps, weight);
  switch (x.device()) {
    case Device::CPU: return cpu::rms_norm_with_sums(x, sums, width, eps, weight);
    case Device::CUDA:
#ifdef DATTN_WITH_CUDA
      return cuda::rms_norm_with_sums(x, sums, width, eps, weight);
#else
      break;
#endif
  }
  detail::no_kernel(op, x.device());
}

Tensor rms_norm_rope_interleaved_with_sums(const Tensor& x, const Tensor& sums, std::int64_t width, float eps,
                                           const Tensor& weight, const Tensor& cos, const Tensor& sin) {
  constexpr const char* op = "rms_norm_rope_interleaved_with_sums";  // its ops time themselves
  check_sums(op, x, sums, width, eps, weight);
  detail::require_ndim(op, "x", x, 4, "[B, S, G, N]");
  detail::require_rope_tables(op, x, cos, sin);
  // Float32 between the norm and the rotation, as rms_norm_rope_interleaved.
  const Tensor n = rms_norm_with_sums(cast(x, DType::F32), sums, width, eps, weight);
  const std::int64_t dr = cos.dim(1);
  const Tensor heads = n.reshape({x.dim(0), x.dim(1), x.dim(2) * (x.dim(3) / dr), dr});
  return cast(apply_rope_interleaved(heads, cos, sin).reshape(x.shape()), x.dtype());
}

}  // namespace dattn::ops
