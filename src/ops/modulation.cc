// Dispatch of the per-token modulation ops, with the checks of the row table and indices.
#include "dattn/ops/modulation.h"

#include "dattn/ops/elementwise.h"
#include "dattn/ops/norm.h"

#include "dattn/core/error.h"
#include "dattn/core/stage_timer.h"
#include "ops/checks.h"
#include "ops/cpu/cpu_ops.h"
#ifdef DATTN_WITH_CUDA
#include "ops/cuda/cuda_ops.h"
#endif

namespace dattn::ops {
namespace {

void check_modulation(const char* op, const Tensor& x, const TokenModulation& m, std::initializer_list<int> ks) {
  detail::require_float(op, "x", x);
  detail::require_defined(op, "params", m.params);
  detail::require_ndim(op, "params", m.params, 3, "[rows, K, D]");
  if (m.params.dtype() != DType::F32)
    throw UserError(std::string(op) + ": params " + m.params.describe() + ": expected fp32");
  detail::require_same_device(op, x, "params", m.params);
  const std::int64_t d = x.ndim() ? x.dim(-1) : 0;
  if (m.params.dim(2) != d)
    throw UserError(std::string(op) + ": params " + m.params.describe() + " do not match x " + x.describe() +
                    " in the last dimension");
  const std::int64_t tokens = d ? x.numel() / d : 0;
  if (static_cast<std::int64_t>(m.row_of_token.size()) != tokens)
    throw UserError(std::string(op) + ": " + std::to_string(m.row_of_token.size()) + " token rows for " +
                    std::to_string(tokens) + " tokens of x " + x.describe());
  for (std::int32_t r : m.row_of_token)
    if (r < 0 || r >= m.params.dim(0))
      throw UserError(std::string(op) + ": token row " + std::to_string(r) + " outside params " +
                      m.params.describe());
  for (int k : ks)
    if (k < 0 || k >= m.params.dim(1))
      throw UserError(std::string(op) + ": vector index " + std::to_string(k) + " outside params " +
                      m.params.describe());
}

// The residual sum: h + x * gate, or h + x.
Tensor residual_of(const Tensor& h, const Tensor& x, const TokenModulation* gate, int gate_k) {
  return gate ? gated_residual(h, x, *gate, gate_k) : add(h, x);
}

// The residual's checks: x like h, the gate's rows and index.
void check_residual(const char* op, const Tensor& h, const Tensor& x, const TokenModulation* gate, int gate_k) {
  if (gate) check_modulation(op, h, *gate, {gate_k});
  detail::require_float(op, "x", x);
  detail::require_shape(op, "x", x, h.shape());
  detail::require_same_device(op, h, "x", x);
}

}  // namespace

Tensor layer_norm_modulated(const Tensor& x, float eps, const TokenModulation& m, int shift_k, int scale_k) {
  const StageScope timed("layer_norm_modulated");
  constexpr const char* op = "layer_norm_modulated";
  check_modulation(op, x, m, {shift_k, scale_k});
  switch (x.device()) {
    case Device::CPU: return cpu::layer_norm_modulated(x, eps, m, shift_k, scale_k);
    case Device::CUDA:
#ifdef DATTN_WITH_CUDA
      return cuda::layer_norm_modulated(x, eps, m, shift_k, scale_k);
#else
      break;
#endif
  }
  detail::no_kernel(op, x.device());
}

Tensor gated_residual(const Tensor& h, const Tensor& x, const TokenModulation& m, int gate_k) {
  const StageScope timed("gated_residual");
  constexpr const char* op = "gated_residual";
  check_modulation(op, h, m, {gate_k});
  detail::require_float(op, "x", x);
  detail::require_shape(op, "x", x, h.shape());
  detail::require_same_device(op, h, "x", x);
  switch (h.device()) {
    case Device::CPU: return cpu::gated_residual(h, x, m, gate_k);
    case Device::CUDA:
#ifdef DATTN_WITH_CUDA
      return cuda::gated_residual(h, x, m, gate_k);
#else
      break;
#endif
  }
  detail::no_kernel(op, h.device());
}

ResidualAndNorm residual_layer_norm_modulated(const Tensor& h, const Tensor& x, const TokenModulation* gate, int gate_k,
                                              float eps, const TokenModulation& norm, int shift_k, int scale_k) {
  constexpr const char* op = "residual_layer_norm_modulated";
  check_modulation(op, h, norm, {shift_k, scale_k});
  check_residual(op, h, x, gate, gate_k);
  switch (h.device()) {
    case Device::CPU: {
      ResidualAndNorm o;
      o.residual = residual_of(h, x, gate, gate_k);
      o.normed = layer_norm_modulated(o.residual, eps, norm, shift_k, scale_k);
      return o;
    }
    case Device::CUDA: {
#ifdef DATTN_WITH_CUDA
      const StageScope timed(op);
      return cuda::residual_layer_norm_modulated(h, x, gate, gate_k, eps, norm, shift_k, scale_k);
#else
      break;
#endif
    }
  }
  detail::no_kernel(op, h.device());
}

ResidualAndNorm residual_layer_norm(const Tensor& h, const Tensor& x, const TokenModulation* gate, int gate_k, float eps,
                                    const Tensor& weight, const Tensor& bias) {
  constexpr const char* op = "residual_layer_norm";
  detail::require_norm_input(op, h, eps);
  check_residual(op, h, x, gate, gate_k);
  detail::require_layer_norm_params(op, h, weight, bias);
  switch (h.device()) {
    case Device::CPU: {
      ResidualAndNorm o;
      o.residual = residual_of(h, x, gate, gate_k);
      o.normed = layer_norm(o.residual, eps, weight, bias);
      return o;
    }
    case Device::CUDA: {
#ifdef DATTN_WITH_CUDA
      const StageScope timed(op);
      return cuda::residual_layer_norm(h, x, gate, gate_k, eps, weight, bias);
#else
      break;
#endif
    }
  }
  detail::no_kernel(op, h.device());
}

}  // namespace dattn::ops
