// Rotary embedding in the rotate-half form (see rope.h): the first half of each head pairs with the second.
#include "ops/cpu/cpu_ops.h"
#include "ops/cpu/rope_heads.h"

namespace dattn::ops::cpu {

Tensor apply_rope_rotate_half(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  return rope_over_heads(x, cos, sin, [](const float* in, float* out, const float* cr, const float* sr, std::int64_t d) {
    const std::int64_t half = d / 2;
    // Two products and a sum, as transformers computes x * cos + rotate_half(x) * sin.
    for (std::int64_t i = 0; i < half; ++i) {
      const float lo = in[i] * cr[i], rot = in[i + half] * sr[i];
      out[i] = lo - rot;
    }
    for (std::int64_t i = half; i < d; ++i) {
      const float hi_part = in[i] * cr[i], rot = in[i - half] * sr[i];
      out[i] = hi_part + rot;
    }
  });
}

}  // namespace dattn::ops::cpu
