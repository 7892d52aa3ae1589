// Sinusoidal timestep embedding, step by step in float32 as diffusers computes it: the frequency
// exponent, the exponential, the product with the timestep and the sin/cos each rounded to float32. A
// correctly rounded result of each step (computed in double, rounded once) matches torch's float32
// kernels to the last bit in nearly every element; what matters most is that the argument t * freq is
// a float32 product, because its rounding (up to 3e-5 rad at t = 700) is part of the reference.
#include <cmath>
#include <vector>

#include "ops/cpu/cpu_ops.h"

namespace dattn::ops::cpu {

Tensor timestep_embedding(const Tensor& t, const TimestepEmbeddingParams& p) {
  const std::vector<double> ts = t.to_f64_vector();
  const std::int64_t n = static_cast<std::int64_t>(ts.size()), half = p.dim / 2;
  std::vector<float> freq(half);
  const float neg_log_period = static_cast<float>(-std::log(double(p.max_period)));
  const float denom = static_cast<float>(half) - p.downscale_freq_shift;
  for (std::int64_t i = 0; i < half; ++i) {
    const float exponent = (neg_log_period * static_cast<float>(i)) / denom;
    freq[i] = static_cast<float>(std::exp(double(exponent)));
  }
  std::vector<float> out(static_cast<std::size_t>(n * p.dim), 0.0f);
  for (std::int64_t r = 0; r < n; ++r) {
    const float tf = static_cast<float>(ts[r]);
    float* row = out.data() + r * p.dim;
    for (std::int64_t i = 0; i < half; ++i) {
      const float arg = p.scale * (tf * freq[i]);
      const float s = static_cast<float>(std::sin(double(arg)));
      const float c = static_cast<float>(std::cos(double(arg)));
      row[i] = p.flip_sin_to_cos ? c : s;
      row[half + i] = p.flip_sin_to_cos ? s : c;
    }
  }
  return Tensor::from_f32(out, {n, p.dim});
}

}  // namespace dattn::ops::cpu
