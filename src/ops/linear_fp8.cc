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

void check_fp8_weight(const char* op, const Fp8Matrix& w) {
  if (!w.defined() || w.values.dtype() != DType::FP8_E4M3 || w.values.ndim() != 2 ||
      w.values.dim(0) != fp8_padded(w.rows) || w.values.dim(1) != fp8_padded(w.cols) || !w.scales.defined() ||
      w.scales.dtype() != DType::F32 || w.scales.numel() != w.rows)
    throw UserError(std::string(op) + ": weight is not a quantize_rows_e4m3 matrix");
}

void check_operands(const char* op, const Fp8Activation& x, const Fp8Matrix& w, const Tensor& bias) {
  check_fp8_weight(op, w);
  check_fp8_weight(op, x.rows);  // the same layout for the activation's rows
  if (x.shape.empty() || x.shape.back() != w.cols || x.rows.cols != w.cols ||
      x.rows.rows != shape_numel(Shape(x.shape.begin(), x.shape.end() - 1)))
    throw UserError(std::string(op) + ": x " + shape_str(x.shape) + " does not end in in_features = " +
                    std::to_string(w.cols));
  if (x.dtype != DType::F32 && x.dtype != DType::BF16 && x.dtype != DType::F16)
    throw UserError(std::string(op) + ": x has dtype " + std::string(dtype_name(x.dtype)) +
                    "; expected fp32, bf16 or fp16");
  detail::require_same_device(op, x.rows.values, "weight", w.values);
  detail::require_same_device(op, x.rows.values, "weight scales", w.scales);
  if (bias.defined()) {
    detail::require_float(op, "bias", bias);
    detail::require_shape(op, "bias", bias, {w.rows});
    detail::require_same_device(op, x.rows.values, "bias", bias);
  }
}

void check_input(const char* op, const Tensor& x, const Fp8Matrix& w) {
  detail::require_float(op, "x", x);
  if (x.ndim() < 1 || x.dim(-1) != w.cols)
    throw UserError(std::string(op) + ": x " + x.describe() + " does not end in in_features = " +
                    std::to_string(w.cols));
}

Tensor run(const char* op, const Fp8Activation& x, const Fp8Matrix& w, const Tensor& bias, bool gelu) {
  check_operands(op, x, w, bias);
  const StageScope timed("gemm");
  switch (x.rows.values.device()) {
    case Device::CPU: return cpu::linear_fp8(x, w, bias, gelu);
    case Device::CUDA:
#ifdef DATTN_WITH_CUDA
      return cuda::linear_fp8(x, w, bias, gelu);
#else
      break;
#endif
  }
  detail::no_kernel(op, x.rows.values.device());
}

Tensor run(const char* op, const Tensor& x, const Fp8Matrix& w, const Tensor& bias, bool gelu) {
  check_fp8_weight(op, w);
  check_input(op, x, w);
  detail::require_same_device(op, x, "weight", w.values);
  return run(op, quantize_activation(x), w, bias, gelu);
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

Fp8Activation quantize_activation(const Tensor& x) {
  if (x.ndim() < 1) throw UserError("quantize_activation: x " + x.describe() + " has no feature dimension");
  const StageScope timed("gemm");  // an FP8 linear's cost, wherever it runs (op times, forward benchmarks)
  return Fp8Activation{quantize_rows_e4m3(x), x.shape(), x.dtype()};
}

Tensor linear_fp8(const Tensor& x, const Fp8Matrix& weight, const Tensor& bias) {
  return run("linear_fp8", x, weight, bias, false);
}

Tensor linear_fp8_gelu_tanh(const Tensor& x, const Fp8Matrix& weight, const Tensor& bias) {
  return run("linear_fp8_gelu_tanh", x, weight, bias, true);
}

Fp8Activation linear_fp8_gelu_tanh_quantized(const Fp8Activation& x, const Fp8Matrix& weight, const Tensor& bias) {
  constexpr const char* op = "linear_fp8_gelu_tanh_quantized";
  // The CPU has no fused form: the two steps, which is what the CUDA kernel must equal.
  if (x.rows.values.device() == Device::CPU) return quantize_activation(run(op, x, weight, bias, true));
  check_operands(op, x, weight, bias);
#ifdef DATTN_WITH_CUDA
  const StageScope timed("gemm");
  return cuda::linear_fp8_gelu_tanh_quantized(x, weight, bias);
#else
  detail::no_kernel(op, x.rows.values.device());
#endif
}

Tensor linear_fp8(const Fp8Activation& x, const Fp8Matrix& weight, const Tensor& bias) {
  return run("linear_fp8", x, weight, bias, false);
}

Tensor linear_fp8_gelu_tanh(const Fp8Activation& x, const Fp8Matrix& weight, const Tensor& bias) {
  return run("linear_fp8_gelu_tanh", x, weight, bias, true);
}

Tensor feed_forward_fp8(const Tensor& x, const Fp8Matrix& w_in, const Tensor& b_in, const Fp8Matrix& w_out,
                        const Tensor& b_out) {
  return linear_fp8(linear_fp8_gelu_tanh_quantized(quantize_activation(x), w_in, b_in), w_out, b_out);
}

}  // namespace dattn::ops
