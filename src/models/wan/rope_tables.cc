// WanRotaryPosEmbed tables (see rope_tables.h).
#include "models/wan/rope_tables.h"

#include <cmath>
#include <vector>

#include "dattn/core/error.h"

namespace dattn::wan {

RopeTables rope_tables(std::int64_t head_dim, std::int64_t max_seq_len, const std::array<std::int64_t, 3>& grid,
                       Device device, double theta) {
  const char* axis_name[3] = {"frames", "height", "width"};
  for (int a = 0; a < 3; ++a)
    if (grid[a] > max_seq_len)
      throw UserError("the latent grid has " + std::to_string(grid[a]) + " patches in " + axis_name[a] +
                      ", more than rope_max_seq_len = " + std::to_string(max_seq_len) + " in config.json");
  const std::int64_t d = head_dim;
  // Column c belongs to part a (t, h, w); within it, column j rotates with frequency index j/2
  // (consecutive columns of a pair share a frequency).
  const std::int64_t hw = 2 * (d / 6);
  const std::int64_t dims[3] = {d - 2 * hw, hw, hw};
  std::vector<double> col_freq(d);
  std::vector<int> col_axis(d);
  for (std::int64_t a = 0, c = 0; a < 3; ++a)
    for (std::int64_t j = 0; j < dims[a]; ++j, ++c) {
      col_freq[c] = 1.0 / std::pow(theta, double(2 * (j / 2)) / double(dims[a]));
      col_axis[c] = static_cast<int>(a);
    }

  const std::int64_t tokens = grid[0] * grid[1] * grid[2];
  std::vector<float> cos(tokens * d), sin(tokens * d);
  for (std::int64_t tok = 0; tok < tokens; ++tok) {
    const std::int64_t pos[3] = {tok / (grid[1] * grid[2]), tok / grid[2] % grid[1], tok % grid[2]};
    for (std::int64_t c = 0; c < d; ++c) {
      const double angle = double(pos[col_axis[c]]) * col_freq[c];
      cos[tok * d + c] = static_cast<float>(std::cos(angle));
      sin[tok * d + c] = static_cast<float>(std::sin(angle));
    }
  }
  return {Tensor::from_f32(cos, {tokens, d}).to(device), Tensor::from_f32(sin, {tokens, d}).to(device)};
}

}  // namespace dattn::wan
