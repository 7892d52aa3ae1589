// Dispatch of linear (one place per op: a CUDA kernel plugs in at the Device::CUDA case).
#include "dattn/ops/linear.h"

#include "dattn/core/error.h"
#include "dattn/core/stage_timer.h"
#include "ops/checks.h"
#include "ops/cpu/cpu_ops.h"
#ifdef DATTN_WITH_CUDA
#include "ops/cuda/cuda_ops.h"
#endif

namespace dattn::ops {

namespace {

void check_linear(const char* op, const Tensor& x, const Tensor& weight, const Tensor& bias) {
  detail::require_float(op, "x", x);
  detail::require_float(op, "weight", weight);
  detail::require_ndim(op, "weight", weight, 2, "[out, in]");
  if (x.ndim() < 1 || x.dim(-1) != weight.dim(1))
    throw UserError(std::string(op) + ": x " + x.describe() + " does not end in in_features = " +
                    std::to_string(weight.dim(1)) + " of weight " + weight.describe());
  detail::require_same_device(op, x, "weight", weight);
  if (bias.defined()) {
    detail::require_float(op, "bias", bias);
    detail::require_shape(op, "bias", bias, {weight.dim(0)});
    detail::require_same_device(op, x, "bias", bias);
  }
}

}  // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  constexpr const char* op = "linear";
  check_linear(op, x, weight, bias);
  const StageScope timed("gemm");
  switch (x.device()) {
    case Device::CPU: return cpu::linear(x, weight, bias);
    case Device::CUDA:
#ifdef DATTN_WITH_CUDA
      return cuda::linear(x, weight, bias);
#else
      break;
#endif
  }
  detail::no_kernel(op, x.device());
}

Tensor linear_gelu_tanh(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  constexpr const char* op = "linear_gelu_tanh";
  check_linear(op, x, weight, bias);
  const StageScope timed("gemm");
  switch (x.device()) {
    case Device::CPU: return cpu::gelu_tanh(cpu::linear(x, weight, bias));
    case Device::CUDA:
#ifdef DATTN_WITH_CUDA
      return cuda::linear_gelu_tanh(x, weight, bias);
#else
      break;
#endif
  }
  detail::no_kernel(op, x.device());
}

void linear(const Tensor& x, const Tensor& weight, const Tensor& bias, const RowWindow& into) {
  constexpr const char* op = "linear";
  check_linear(op, x, weight, bias);
  Shape y_shape = x.shape();
  y_shape.back() = weight.dim(0);
  detail::require_window(op, x, y_shape, into);
  switch (x.device()) {
    case Device::CPU: return copy_into(linear(x, weight, bias), into);
    case Device::CUDA: {
#ifdef DATTN_WITH_CUDA
      const StageScope timed("gemm");
      return cuda::linear(x, weight, bias, into);
#else
      break;
#endif
    }
  }
  detail::no_kernel(op, x.device());
}

Tensor linear(const RowWindow& x_rows, std::int64_t rows, const Tensor& weight, const Tensor& bias) {
  constexpr const char* op = "linear";
  const Tensor& x = x_rows.out;
  detail::require_defined(op, "x_rows.out", x);
  detail::require_ndim(op, "x_rows.out", x, 3, "[B, S, in]");
  check_linear(op, x, weight, bias);
  if (rows < 0 || x_rows.row < 0 || x_rows.row > x.dim(1) - rows)
    throw UserError(std::string(op) + ": rows [" + std::to_string(x_rows.row) + ", " + std::to_string(x_rows.row + rows) +
                    ") must lie within x_rows.out " + x.describe());
  if (x.device() == Device::CUDA) {
#ifdef DATTN_WITH_CUDA
    const StageScope timed("gemm");
    return cuda::linear(x_rows, rows, weight, bias);
#endif
  }
  return linear(copy_from(x_rows, rows), weight, bias);
}

}  // namespace dattn::ops
