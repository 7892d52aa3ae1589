// Rotary embedding on interleaved pairs (cos from even columns, sin from odd ones; see rope.h).
#include "ops/cpu/cpu_ops.h"
#include "ops/cpu/rope_heads.h"

namespace dattn::ops::cpu {

Tensor apply_rope_interleaved(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  return rope_over_heads(x, cos, sin, [](const float* in, float* out, const float* cr, const float* sr, std::int64_t d) {
    for (std::int64_t i = 0; i < d; i += 2) {
      const float x1 = in[i], x2 = in[i + 1], cv = cr[i], sv = sr[i + 1];
      out[i] = x1 * cv - x2 * sv;
      out[i + 1] = x1 * sv + x2 * cv;
    }
  });
}

}  // namespace dattn::ops::cpu
