// CPU kernel of ops::transpose2d: 32 x 32 blocks, so that both the reads and the writes stay in cache.
#include <algorithm>
#include <cstdint>

#include "ops/cpu/cpu_ops.h"

namespace dattn::ops::cpu {

void transpose2d(const Tensor& x, Tensor& y) {
  using i64 = std::int64_t;
  constexpr i64 kBlock = 32;
  const i64 rows = x.dim(0), cols = x.dim(1);
  const float* src = x.data_as<float>();
  float* dst = y.data_as<float>();
  const i64 row_blocks = (rows + kBlock - 1) / kBlock, col_blocks = (cols + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (x.numel() >= (i64{1} << 16))
  for (i64 b = 0; b < row_blocks * col_blocks; ++b) {
    const i64 r0 = b / col_blocks * kBlock, c0 = b % col_blocks * kBlock;
    for (i64 r = r0; r < std::min(rows, r0 + kBlock); ++r)
      for (i64 c = c0; c < std::min(cols, c0 + kBlock); ++c) dst[c * rows + r] = src[r * cols + c];
  }
}

}  // namespace dattn::ops::cpu
