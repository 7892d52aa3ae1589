// Rotary embedding in the rotate-half form (see rope.h): the first half of each head pairs with the second.
#include "ops/cpu/cpu_ops.h"
#include "ops/cpu/f32_io.h"

namespace dattn::ops::cpu {

Tensor apply_rope_rotate_half(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  const std::int64_t b = x.dim(0), s = x.dim(1), h = x.dim(2), d = x.dim(3), half = d / 2;
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  F32View xv(x);
  F32Sink ys(y);
  const float* c = cos.data_as<float>();
  const float* sn = sin.data_as<float>();
#pragma omp parallel for collapse(2) schedule(static)
  for (std::int64_t bi = 0; bi < b; ++bi)
    for (std::int64_t si = 0; si < s; ++si) {
      const float* cr = c + si * d;
      const float* sr = sn + si * d;
      for (std::int64_t hi = 0; hi < h; ++hi) {
        const std::int64_t off = ((bi * s + si) * h + hi) * d;
        const float* in = xv.data() + off;
        float* out = ys.data() + off;
        // Two products and a sum, as transformers computes x * cos + rotate_half(x) * sin.
        for (std::int64_t i = 0; i < half; ++i) {
          const float lo = in[i] * cr[i], rot = in[i + half] * sr[i];
          out[i] = lo - rot;
        }
        for (std::int64_t i = half; i < d; ++i) {
          const float hi_part = in[i] * cr[i], rot = in[i - half] * sr[i];
          out[i] = hi_part + rot;
        }
      }
    }
  ys.finish();
  return y;
}

}  // namespace dattn::ops::cpu
