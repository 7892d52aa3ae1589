// Layer norm and RMS norm over the last dimension. Statistics are accumulated in double: the result is
// then within one float32 rounding of the exact value, which keeps golden comparisons about the model.
#include <cmath>

#include "ops/cpu/cpu_ops.h"
#include "dattn/ops/combine.h"
#include "ops/cpu/f32_io.h"

namespace dattn::ops::cpu {

Tensor layer_norm(const Tensor& x, float eps, const Tensor& weight, const Tensor& bias) {
  const std::int64_t d = x.dim(-1), rows = d ? x.numel() / d : 0;
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  F32View xv(x), wv(weight), bv(bias);
  F32Sink ys(y);
  const float* w = wv.data();
  const float* b = bv.data();
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* in = xv.data() + r * d;
    float* out = ys.data() + r * d;
    double sum = 0;
    for (std::int64_t i = 0; i < d; ++i) sum += in[i];
    const double mean = sum / double(d);
    double sq = 0;
    for (std::int64_t i = 0; i < d; ++i) sq += (in[i] - mean) * (in[i] - mean);
    const double inv = 1.0 / std::sqrt(sq / double(d) + double(eps));
    for (std::int64_t i = 0; i < d; ++i) {
      double v = (in[i] - mean) * inv;
      if (w) v = v * w[i] + b[i];
      out[i] = static_cast<float>(v);
    }
  }
  ys.finish();
  return y;
}

Tensor rms_norm(const Tensor& x, float eps, const Tensor& weight) {
  const std::int64_t d = x.dim(-1), rows = d ? x.numel() / d : 0;
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  F32View xv(x), wv(weight);
  F32Sink ys(y);
  const float* w = wv.data();
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* in = xv.data() + r * d;
    float* out = ys.data() + r * d;
    double sq = 0;
    for (std::int64_t i = 0; i < d; ++i) sq += double(in[i]) * in[i];
    const double inv = 1.0 / std::sqrt(sq / double(d) + double(eps));
    for (std::int64_t i = 0; i < d; ++i) out[i] = static_cast<float>(in[i] * inv * (w ? w[i] : 1.0f));
  }
  ys.finish();
  return y;
}

// Float32 between the norm and the rotation, rounded once to x's dtype, as the fused CUDA kernel.
Tensor rms_norm_rope_interleaved(const Tensor& x, float eps, const Tensor& weight, const Tensor& cos,
                                 const Tensor& sin) {
  const Tensor n = rms_norm(ops::cast(x, DType::F32), eps, weight);
  const std::int64_t dr = cos.dim(1);
  const Tensor heads = n.reshape({x.dim(0), x.dim(1), x.dim(2) * (x.dim(3) / dr), dr});
  return ops::cast(apply_rope_interleaved(heads, cos, sin).reshape(x.shape()), x.dtype());
}

}  // namespace dattn::ops::cpu
