// Dispatch of cast, linear_combination and guidance_combine, with their argument checks.
#include "dattn/ops/combine.h"

#include <string>

#include "dattn/core/error.h"
#include "ops/checks.h"
#include "ops/cpu/combine_cpu.h"
#ifdef DATTN_WITH_CUDA
#include "ops/cuda/combine_cuda.h"
#include "ops/cuda/cuda_ops.h"
#endif

namespace dattn::ops {
namespace {

bool is_float_or_double(DType d) { return d == DType::F32 || d == DType::BF16 || d == DType::F16 || d == DType::F64; }

}  // namespace

Tensor cast(const Tensor& x, DType dtype) {
  detail::require_defined("cast", "x", x);
  if (!is_float_or_double(x.dtype()) || !is_float_or_double(dtype))
    throw UserError("cast: " + x.describe() + " to " + std::string(dtype_name(dtype)) +
                    ": expected fp32, bf16, fp16 or fp64 on both sides");
  if (x.dtype() == dtype) return x;
  switch (x.device()) {
    case Device::CPU: return x.to(dtype);
    case Device::CUDA:
#ifdef DATTN_WITH_CUDA
      return cuda::convert(x, dtype);
#else
      break;
#endif
  }
  detail::no_kernel("cast", x.device());
}

Tensor linear_combination(const std::vector<ScaledTensor>& terms, DType out_dtype) {
  constexpr const char* op = "linear_combination";
  if (terms.empty() || terms.size() > kMaxCombinationTerms)
    throw UserError(std::string(op) + ": " + std::to_string(terms.size()) + " terms; expected 1 to " +
                    std::to_string(kMaxCombinationTerms));
  if (out_dtype != DType::F32 && out_dtype != DType::F64)
    throw UserError(std::string(op) + ": output dtype " + std::string(dtype_name(out_dtype)) + ": expected fp32 or fp64");
  const Tensor& first = terms.front().tensor;
  for (const ScaledTensor& t : terms) {
    detail::require_defined(op, "term", t.tensor);
    if (t.tensor.dtype() != DType::F32 && t.tensor.dtype() != DType::F64)
      throw UserError(std::string(op) + ": term " + t.tensor.describe() + ": expected fp32 or fp64");
    detail::require_shape(op, "term", t.tensor, first.shape());
    detail::require_same_device(op, first, "term", t.tensor);
  }
  switch (first.device()) {
    case Device::CPU: return cpu::linear_combination(terms, out_dtype);
    case Device::CUDA:
#ifdef DATTN_WITH_CUDA
      return cuda::linear_combination(terms, out_dtype);
#else
      break;
#endif
  }
  detail::no_kernel(op, first.device());
}

Tensor guidance_combine(const Tensor& cond, const Tensor& uncond, float scale) {
  constexpr const char* op = "guidance_combine";
  detail::require_defined(op, "cond", cond);
  detail::require_defined(op, "uncond", uncond);
  if (cond.dtype() != DType::F32 || uncond.dtype() != DType::F32)
    throw UserError(std::string(op) + ": cond " + cond.describe() + " and uncond " + uncond.describe() +
                    ": expected fp32");
  detail::require_shape(op, "uncond", uncond, cond.shape());
  detail::require_same_device(op, cond, "uncond", uncond);
  switch (cond.device()) {
    case Device::CPU: return cpu::guidance_combine(cond, uncond, scale);
    case Device::CUDA:
#ifdef DATTN_WITH_CUDA
      return cuda::guidance_combine(cond, uncond, scale);
#else
      break;
#endif
  }
  detail::no_kernel(op, cond.device());
}

}  // namespace dattn::ops
