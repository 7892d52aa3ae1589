// Dispatch of layer_norm, rms_norm and normalize_channels.
#include "dattn/ops/norm.h"

#include <string>

#include "dattn/core/error.h"
#include "dattn/core/stage_timer.h"
#include "ops/checks.h"
#include "ops/cpu/cpu_ops.h"
#ifdef DATTN_WITH_CUDA
#include "ops/cuda/cuda_ops.h"
#include "ops/cuda/frame_kernels.h"
#endif

namespace dattn::ops {
Tensor layer_norm(const Tensor& x, float eps, const Tensor& weight, const Tensor& bias) {
  const StageScope timed("layer_norm");
  constexpr const char* op = "layer_norm";
  detail::require_norm_input(op, x, eps);
  detail::require_layer_norm_params(op, x, weight, bias);
  switch (x.device()) {
    case Device::CPU: return cpu::layer_norm(x, eps, weight, bias);
    case Device::CUDA:
#ifdef DATTN_WITH_CUDA
      return cuda::layer_norm(x, eps, weight, bias);
#else
      break;
#endif
  }
  detail::no_kernel(op, x.device());
}

Tensor rms_norm(const Tensor& x, float eps, const Tensor& weight) {
  const StageScope timed("rms_norm");
  constexpr const char* op = "rms_norm";
  detail::require_norm_input(op, x, eps);
  detail::require_norm_param(op, "weight", x, weight);
  switch (x.device()) {
    case Device::CPU: return cpu::rms_norm(x, eps, weight);
    case Device::CUDA:
#ifdef DATTN_WITH_CUDA
      return cuda::rms_norm(x, eps, weight);
#else
      break;
#endif
  }
  detail::no_kernel(op, x.device());
}

void rms_norm(const Tensor& x, float eps, const Tensor& weight, const RowWindow& into) {
  constexpr const char* op = "rms_norm";
  detail::require_norm_input(op, x, eps);
  detail::require_norm_param(op, "weight", x, weight);
  detail::require_window(op, x, x.shape(), into);
  if (x.device() == Device::CPU) return copy_into(rms_norm(x, eps, weight), into);
  const StageScope timed("rms_norm");
#ifdef DATTN_WITH_CUDA
  return cuda::rms_norm(x, eps, weight, into);
#else
  detail::no_kernel(op, x.device());
#endif
}

namespace {

void check_norm_rope(const char* op, const Tensor& x, float eps, const Tensor& weight, const Tensor& cos,
                     const Tensor& sin) {
  detail::require_norm_input(op, x, eps);
  detail::require_ndim(op, "x", x, 4, "[B, S, G, N]");
  detail::require_norm_param(op, "weight", x, weight);
  detail::require_rope_tables(op, x, cos, sin);
}

}  // namespace

Tensor rms_norm_rope_interleaved(const Tensor& x, float eps, const Tensor& weight, const Tensor& cos,
                                 const Tensor& sin) {
  const StageScope timed("rms_norm_rope");
  constexpr const char* op = "rms_norm_rope_interleaved";
  check_norm_rope(op, x, eps, weight, cos, sin);
  switch (x.device()) {
    case Device::CPU: return cpu::rms_norm_rope_interleaved(x, eps, weight, cos, sin);
    case Device::CUDA:
#ifdef DATTN_WITH_CUDA
      return cuda::rms_norm_rope_interleaved(x, eps, weight, cos, sin);
#else
      break;
#endif
  }
  detail::no_kernel(op, x.device());
}

void rms_norm_rope_interleaved(const Tensor& x, float eps, const Tensor& weight, const Tensor& cos, const Tensor& sin,
                               const RowWindow& into) {
  constexpr const char* op = "rms_norm_rope_interleaved";
  check_norm_rope(op, x, eps, weight, cos, sin);
  detail::require_window(op, x, x.shape(), into);
  if (x.device() == Device::CPU) return copy_into(rms_norm_rope_interleaved(x, eps, weight, cos, sin), into);
  const StageScope timed("rms_norm_rope");
#ifdef DATTN_WITH_CUDA
  return cuda::rms_norm_rope_interleaved(x, eps, weight, cos, sin, into);
#else
  detail::no_kernel(op, x.device());
#endif
}

Tensor normalize_channels(const Tensor& x, const Tensor& gain, bool silu, std::optional<DType> out_dtype) {
  const StageScope timed("normalize_channels");
  constexpr const char* op = "normalize_channels";
  const DType y_dtype = out_dtype.value_or(x.dtype());
  if (x.device() == Device::CPU || x.dtype() != DType::BF16) detail::require_f32(op, "x", x);
  if (y_dtype != DType::F32 && (x.device() == Device::CPU || y_dtype != DType::BF16))
    throw UserError(std::string(op) + ": output dtype " + std::string(dtype_name(y_dtype)) + " on " +
                    std::string(device_name(x.device())) + ": expected fp32 (or bf16 on cuda)");
  if (x.ndim() < 1) throw UserError(std::string(op) + ": x " + x.describe() + " has no last dimension");
  detail::require_f32(op, "gain", gain);
  detail::require_shape(op, "gain", gain, {x.dim(-1)});
  detail::require_same_device(op, x, "gain", gain);
  switch (x.device()) {
    case Device::CPU: return cpu::normalize_channels(x, gain, silu);
    case Device::CUDA: {
#ifdef DATTN_WITH_CUDA
      Tensor y = Tensor::empty(x.shape(), y_dtype, Device::CUDA);
      const std::int64_t c = x.dim(-1);
      cuda::normalize_channels(x.data(), x.dtype(), y.data(), y_dtype, gain.data_as<float>(), c ? x.numel() / c : 0,
                               static_cast<int>(c), silu);
      return y;
#else
      break;
#endif
    }
  }
  detail::no_kernel(op, x.device());
}

}  // namespace dattn::ops
