#pragma once
// The loop both CPU rotary embeddings share: every (batch, token, head) row of x [B, S, H, D] in float32,
// with that token's cos and sin rows, handed to `rotate(in, out, cos_row, sin_row, D)`.
#include <cstdint>

#include "dattn/core/tensor.h"
#include "ops/cpu/f32_io.h"

namespace dattn::ops::cpu {

template <class Rotate>
Tensor rope_over_heads(const Tensor& x, const Tensor& cos, const Tensor& sin, Rotate rotate) {
  const std::int64_t b = x.dim(0), s = x.dim(1), h = x.dim(2), d = x.dim(3);
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  F32View xv(x);
  F32Sink ys(y);
  const float* c = cos.data_as<float>();
  const float* sn = sin.data_as<float>();
#pragma omp parallel for collapse(2) schedule(static)
  for (std::int64_t bi = 0; bi < b; ++bi)
    for (std::int64_t si = 0; si < s; ++si)
      for (std::int64_t hi = 0; hi < h; ++hi) {
        const std::int64_t off = ((bi * s + si) * h + hi) * d;
        rotate(xv.data() + off, ys.data() + off, c + si * d, sn + si * d, d);
      }
  ys.finish();
  return y;
}

}  // namespace dattn::ops::cpu
