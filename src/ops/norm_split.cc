// Dispatch of the split RMS norm (norm_split.h). There is no CUDA kernel yet: CUDA tensors go through
// the host (correct, slow; tensor parallel has not run on GPUs).
#include "dattn/ops/norm_split.h"

#include <string>

#include "dattn/core/error.h"
#include "dattn/core/stage_timer.h"
#include "ops/checks.h"
#include "ops/cpu/cpu_ops.h"

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

Tensor host(const Tensor& t) { return t.defined() ? t.to(Device::CPU) : t; }

}  // namespace

Tensor sum_squares(const Tensor& x) {
  const StageScope timed("sum_squares");
  constexpr const char* op = "sum_squares";
  detail::require_float(op, "x", x);
  if (x.ndim() < 1) throw UserError(std::string(op) + ": x " + x.describe() + " has no last dimension");
  if (x.device() == Device::CPU) return cpu::sum_squares(x);
  return cpu::sum_squares(host(x)).to(x.device());
}

Tensor rms_norm_with_sums(const Tensor& x, const Tensor& sums, std::int64_t width, float eps, const Tensor& weight) {
  const StageScope timed("rms_norm_with_sums");
  check_sums("rms_norm_with_sums", x, sums, width, eps, weight);
  if (x.device() == Device::CPU) return cpu::rms_norm_with_sums(x, sums, width, eps, weight);
  return cpu::rms_norm_with_sums(host(x), host(sums), width, eps, host(weight)).to(x.device());
}

Tensor rms_norm_rope_interleaved_with_sums(const Tensor& x, const Tensor& sums, std::int64_t width, float eps,
                                           const Tensor& weight, const Tensor& cos, const Tensor& sin) {
  const StageScope timed("rms_norm_rope_with_sums");
  constexpr const char* op = "rms_norm_rope_interleaved_with_sums";
  check_sums(op, x, sums, width, eps, weight);
  detail::require_ndim(op, "x", x, 4, "[B, S, G, N]");
  detail::require_rope_tables(op, x, cos, sin);
  if (x.device() == Device::CPU) return cpu::rms_norm_rope_interleaved_with_sums(x, sums, width, eps, weight, cos, sin);
  return cpu::rms_norm_rope_interleaved_with_sums(host(x), host(sums), width, eps, host(weight), host(cos), host(sin))
      .to(x.device());
}

}  // namespace dattn::ops
