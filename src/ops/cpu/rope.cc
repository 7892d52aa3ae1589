// Rotary embedding on interleaved pairs (cos from even columns, sin from odd ones; see rope.h).
#include "ops/cpu/cpu_ops.h"
#include "ops/cpu/f32_io.h"

namespace dattn::ops::cpu {

Tensor apply_rope_interleaved(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  const std::int64_t b = x.dim(0), s = x.dim(1), h = x.dim(2), d = x.dim(3);
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
        for (std::int64_t i = 0; i < d; i += 2) {
          const float x1 = in[i], x2 = in[i + 1], cv = cr[i], sv = sr[i + 1];
          out[i] = x1 * cv - x2 * sv;
          out[i + 1] = x1 * sv + x2 * cv;
        }
      }
    }
  ys.finish();
  return y;
}

}  // namespace dattn::ops::cpu
