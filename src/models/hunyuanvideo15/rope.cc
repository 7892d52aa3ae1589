// HunyuanVideo-1.5 RoPE tables (see rope.h).
#include "models/hunyuanvideo15/rope.h"

#include <cmath>
#include <vector>

namespace dattn::hv15 {

RopeTables rope_tables(const std::array<std::int64_t, 3>& axes, const std::array<std::int64_t, 3>& grid, double theta,
                       Device device) {
  const std::int64_t d = axes[0] + axes[1] + axes[2];
  const std::int64_t s = grid[0] * grid[1] * grid[2];
  std::vector<float> cos(static_cast<std::size_t>(s * d)), sin(cos.size());
  const float th = static_cast<float>(theta);
  std::int64_t col0 = 0;
  for (int a = 0; a < 3; ++a) {
    const std::int64_t dim = axes[a];
    std::vector<float> freq(static_cast<std::size_t>(dim / 2));
    for (std::int64_t k = 0; k < dim / 2; ++k)
      freq[k] = 1.0f / std::pow(th, static_cast<float>(2 * k) / static_cast<float>(dim));
    for (std::int64_t t = 0; t < s; ++t) {
      const std::int64_t pos[3] = {t / (grid[1] * grid[2]), (t / grid[2]) % grid[1], t % grid[2]};
      const float p = static_cast<float>(pos[a]);
      for (std::int64_t k = 0; k < dim / 2; ++k) {
        const float angle = p * freq[k];
        const float c = std::cos(angle), sn = std::sin(angle);
        for (int r = 0; r < 2; ++r) {
          cos[t * d + col0 + 2 * k + r] = c;
          sin[t * d + col0 + 2 * k + r] = sn;
        }
      }
    }
    col0 += dim;
  }
  return {Tensor::from_f32(cos, {s, d}).to(device), Tensor::from_f32(sin, {s, d}).to(device)};
}

}  // namespace dattn::hv15
