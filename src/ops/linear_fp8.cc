// Dispatch of the FP8 linear ops (ops/linear_fp8.h).
#include "dattn/ops/linear_fp8.h"

#include <string>

#include "dattn/core/error.h"
#include "dattn/core/stage_timer.h"
#include "ops/checks.h"
#include "ops/cpu/linear_fp8.h"
#ifdef DATTN_WITH_CUDA
#include "ops/cuda/linear_fp8.h"
#endif

namespace dattn::ops {
namespace {

void check_fp8_weight(const char* op, const Tensor& x, const Fp8Matrix& w, const Tensor& bias) {
  detail::require_float(op, "x", x);
  if (!w.defined() || w.values.dtype() != DType::FP8_E4M3 || w.values.ndim() != 2 ||
      w.values.dim(0) != fp8_padded(w.rows) || w.values.dim(1) != fp8_padded(w.cols) || !w.scales.defined() ||
      w.scales.dtype() != DType::F32 || w.scales.numel() != w.rows)
    throw UserError(std::string(op) + ": weight is not a quantize_rows_e4m3 matrix");
  if (x.ndim() < 1 || x.dim(-1) != w.cols)
    throw UserError(std::string(op) + ": x " + x.describe() + " does not end in in_features = " +
                    std::to_string(w.cols));
  detail::require_same_device(op, x, "weight", w.values);
  detail::require_same_device(op, x, "weight scales", w.scales);
  if (bias.defined()) {
    detail::require_float(op, "bias", bias);
    detail::require_shape(op, "bias", bias, {w.rows});
    detail::require_same_device(op, x, "bias", bias);
  }
}

Tensor run(const char* op, const Tensor& x, const Fp8Matrix& w, const Tensor& bias, bool gelu) {
  check_fp8_weight(op, x, w, bias);
  const StageScope timed("gemm");
  switch (x.device()) {
    case Device::CPU: return cpu::linear_fp8(x, w, bias, gelu);
    case Device::CUDA:
#ifdef DATTN_WITH_CUDA
      return cuda::linear_fp8(x, w, bias, gelu);
#else
      break;
#endif
  }
  detail::no_kernel(op, x.device());
}

}  // namespace

Fp8Matrix quantize_rows_e4m3(const Tensor& x) {
  constexpr const char* op = "quantize_rows_e4m3";
  detail::require_float(op, "x", x);
  switch (x.device()) {
    case Device::CPU: return cpu::quantize_rows_e4m3(x);
    case Device::CUDA:
#ifdef DATTN_WITH_CUDA
      return cuda::quantize_rows_e4m3(x);
#else
      break;
#endif
  }
  detail::no_kernel(op, x.device());
}

Tensor linear_fp8(const Tensor& x, const Fp8Matrix& weight, const Tensor& bias) {
  return run("linear_fp8", x, weight, bias, false);
}

Tensor linear_fp8_gelu_tanh(const Tensor& x, const Fp8Matrix& weight, const Tensor& bias) {
  return run("linear_fp8_gelu_tanh", x, weight, bias, true);
}

}  // namespace dattn::ops
