// Elementwise activations in float32.
#include <cmath>

#include "ops/cpu/cpu_ops.h"
#include "ops/cpu/f32_io.h"

namespace dattn::ops::cpu {
namespace {

template <class F>
Tensor map(const Tensor& x, F f) {
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  F32View xv(x);
  F32Sink ys(y);
  const std::int64_t n = x.numel();
  const float* in = xv.data();
  float* out = ys.data();
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) out[i] = f(in[i]);
  ys.finish();
  return y;
}

}  // namespace

Tensor gelu_tanh(const Tensor& x) {
  return map(x, [](float v) {
    const float k = 0.7978845608028654f;  // sqrt(2 / pi)
    return 0.5f * v * (1.0f + std::tanh(k * (v + 0.044715f * v * v * v)));
  });
}

Tensor gelu(const Tensor& x) {
  return map(x, [](float v) { return 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f)); });
}

Tensor silu(const Tensor& x) {
  return map(x, [](float v) { return v / (1.0f + std::exp(-v)); });
}

}  // namespace dattn::ops::cpu
