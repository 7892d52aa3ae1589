// The split RMS norm's CPU kernels (norm_split.h), the arithmetic of cpu::rms_norm: double sums and scale,
// each output rounded once.
#include <cmath>

#include "ops/cpu/cpu_ops.h"
#include "ops/cpu/f32_io.h"

namespace dattn::ops::cpu {

Tensor sum_squares(const Tensor& x) {
  const std::int64_t d = x.dim(-1), rows = d ? x.numel() / d : 0;
  const Shape lead(x.shape().begin(), x.shape().end() - 1);
  Tensor sums = Tensor::zeros(lead, DType::F64);  // rows of no columns sum to 0
  F32View xv(x);
  double* out = static_cast<double*>(sums.data());
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* in = xv.data() + r * d;
    double sq = 0;
    for (std::int64_t i = 0; i < d; ++i) sq += double(in[i]) * in[i];
    out[r] = sq;
  }
  return sums;
}

Tensor rms_norm_with_sums(const Tensor& x, const Tensor& sums, std::int64_t width, float eps, const Tensor& weight) {
  const std::int64_t d = x.dim(-1), rows = d ? x.numel() / d : 0;
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  F32View xv(x), wv(weight);
  F32Sink ys(y);
  const float* w = wv.data();
  const double* sq = static_cast<const double*>(sums.data());
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* in = xv.data() + r * d;
    float* out = ys.data() + r * d;
    const double inv = 1.0 / std::sqrt(sq[r] / double(width) + double(eps));
    for (std::int64_t i = 0; i < d; ++i) out[i] = static_cast<float>(in[i] * inv * (w ? w[i] : 1.0f));
  }
  ys.finish();
  return y;
}

}  // namespace dattn::ops::cpu
