// Dispatch of add and mul, with the broadcast check.
#include "dattn/ops/elementwise.h"

#include <algorithm>

#include "dattn/core/error.h"
#include "dattn/core/stage_timer.h"
#include "ops/checks.h"
#include "ops/cpu/cpu_ops.h"
#ifdef DATTN_WITH_CUDA
#include "ops/cuda/cuda_ops.h"
#endif

namespace dattn::ops {

std::optional<Shape> broadcast_shape(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()));
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    const std::int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[out.size() - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

namespace {

std::pair<Shape, DType> check_binary(const char* op, const Tensor& a, const Tensor& b, std::optional<DType> out) {
  detail::require_float(op, "a", a);
  detail::require_float(op, "b", b);
  detail::require_same_device(op, a, "b", b);
  auto shape = broadcast_shape(a.shape(), b.shape());
  if (!shape)
    throw UserError(std::string(op) + ": a " + a.describe() + " and b " + b.describe() + " do not broadcast");
  const DType d = out.value_or(a.dtype());
  if (d != DType::F32 && d != DType::BF16 && d != DType::F16)
    throw UserError(std::string(op) + ": output dtype " + std::string(dtype_name(d)) +
                    ": expected fp32, bf16 or fp16");
  return {*shape, d};
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b, std::optional<DType> out_dtype) {
  const StageScope timed("add");
  const auto [shape, d] = check_binary("add", a, b, out_dtype);
  switch (a.device()) {
    case Device::CPU: return cpu::add(a, b, shape, d);
    case Device::CUDA:
#ifdef DATTN_WITH_CUDA
      return cuda::add(a, b, shape, d);
#else
      break;
#endif
  }
  detail::no_kernel("add", a.device());
}

Tensor mul(const Tensor& a, const Tensor& b, std::optional<DType> out_dtype) {
  const StageScope timed("mul");
  const auto [shape, d] = check_binary("mul", a, b, out_dtype);
  switch (a.device()) {
    case Device::CPU: return cpu::mul(a, b, shape, d);
    case Device::CUDA:
#ifdef DATTN_WITH_CUDA
      return cuda::mul(a, b, shape, d);
#else
      break;
#endif
  }
  detail::no_kernel("mul", a.device());
}

}  // namespace dattn::ops
