// CPU linear_combination and guidance_combine.
#include "ops/cpu/combine_cpu.h"

#include <cstdint>

namespace dattn::ops::cpu {
namespace {

double read(const Tensor& t, std::int64_t i) {
  return t.dtype() == DType::F64 ? t.data_as<double>()[i] : static_cast<double>(t.data_as<float>()[i]);
}

}  // namespace

Tensor linear_combination(const std::vector<ScaledTensor>& terms, DType out_dtype) {
  const Tensor& first = terms.front().tensor;
  Tensor out = Tensor::empty(first.shape(), out_dtype);
  const std::int64_t n = first.numel();
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    double v = terms[0].coefficient * read(terms[0].tensor, i);
    for (std::size_t j = 1; j < terms.size(); ++j) v += terms[j].coefficient * read(terms[j].tensor, i);
    if (out_dtype == DType::F64)
      out.data_as<double>()[i] = v;
    else
      out.data_as<float>()[i] = static_cast<float>(v);
  }
  return out;
}

Tensor guidance_combine(const Tensor& cond, const Tensor& uncond, float scale) {
  Tensor out = Tensor::empty(cond.shape(), DType::F32);
  const float* c = cond.data_as<float>();
  const float* u = uncond.data_as<float>();
  float* o = out.data_as<float>();
  const std::int64_t n = out.numel();
  for (std::int64_t i = 0; i < n; ++i) {
    const float diff = c[i] - u[i];
    const float scaled = scale * diff;
    o[i] = u[i] + scaled;
  }
  return out;
}

}  // namespace dattn::ops::cpu
