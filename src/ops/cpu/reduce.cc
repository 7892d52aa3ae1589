// Token reductions on the host, accumulated in double.
#include "ops/cpu/cpu_ops.h"
#include "ops/cpu/f32_io.h"

namespace dattn::ops::cpu {

Tensor mean_rows(const Tensor& x, const std::vector<std::int64_t>& counts) {
  const std::int64_t b = x.dim(0), n = x.dim(1), d = x.dim(2);
  Tensor y = Tensor::empty({b, d}, DType::F32);
  F32View xv(x);
  const float* in = xv.data();
  float* out = y.data_as<float>();
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < b * d; ++i) {
    const std::int64_t bi = i / d, c = i % d;
    double s = 0;
    for (std::int64_t r = 0; r < counts[bi]; ++r) s += in[(bi * n + r) * d + c];
    out[i] = static_cast<float>(s / static_cast<double>(counts[bi]));
  }
  return y;
}

}  // namespace dattn::ops::cpu
