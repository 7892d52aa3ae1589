// Per-token modulated layer norm and gated residual (adaLN), parameters looked up by row.
#include <cmath>

#include "ops/cpu/cpu_ops.h"
#include "ops/cpu/f32_io.h"

namespace dattn::ops::cpu {

Tensor layer_norm_modulated(const Tensor& x, float eps, const TokenModulation& m, int shift_k, int scale_k) {
  const std::int64_t d = x.dim(-1), tokens = d ? x.numel() / d : 0, k = m.params.dim(1);
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  F32View xv(x);
  F32Sink ys(y);
  const float* params = m.params.data_as<float>();
#pragma omp parallel for schedule(static)
  for (std::int64_t t = 0; t < tokens; ++t) {
    const float* in = xv.data() + t * d;
    const float* row = params + std::int64_t{m.row_of_token[t]} * k * d;
    const float* shift = row + shift_k * d;
    const float* scale = row + scale_k * d;
    double sum = 0;
    for (std::int64_t i = 0; i < d; ++i) sum += in[i];
    const double mean = sum / double(d);
    double sq = 0;
    for (std::int64_t i = 0; i < d; ++i) sq += (in[i] - mean) * (in[i] - mean);
    const double inv = 1.0 / std::sqrt(sq / double(d) + double(eps));
    float* out = ys.data() + t * d;
    for (std::int64_t i = 0; i < d; ++i)
      out[i] = static_cast<float>((in[i] - mean) * inv * (1.0 + double(scale[i])) + double(shift[i]));
  }
  ys.finish();
  return y;
}

Tensor gated_residual(const Tensor& h, const Tensor& x, const TokenModulation& m, int gate_k) {
  const std::int64_t d = h.dim(-1), tokens = d ? h.numel() / d : 0, k = m.params.dim(1);
  Tensor y = Tensor::empty(h.shape(), h.dtype());
  F32View hv(h), xv(x);
  F32Sink ys(y);
  const float* params = m.params.data_as<float>();
#pragma omp parallel for schedule(static)
  for (std::int64_t t = 0; t < tokens; ++t) {
    const float* gate = params + (std::int64_t{m.row_of_token[t]} * k + gate_k) * d;
    const float* hr = hv.data() + t * d;
    const float* xr = xv.data() + t * d;
    float* out = ys.data() + t * d;
    for (std::int64_t i = 0; i < d; ++i) out[i] = hr[i] + xr[i] * gate[i];
  }
  ys.finish();
  return y;
}

}  // namespace dattn::ops::cpu
