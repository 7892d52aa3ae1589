#pragma once
// Float64 reference of ops::rms_norm_rope_interleaved: x [B, S, G, N] normalised over N (times w when
// given), then every run of dr elements rotated with the tables cos, sin [S, dr] (rope.h's formula).
#include <cmath>
#include <cstdint>
#include <vector>

namespace dattn::testing {

inline std::vector<double> norm_rope_ref(const std::vector<double>& x, std::int64_t s, std::int64_t g, std::int64_t n,
                                         double eps, const double* w, const std::vector<double>& cos,
                                         const std::vector<double>& sin, std::int64_t dr) {
  std::vector<double> y(x.size());
  for (std::size_t r = 0; r < x.size() / n; ++r) {
    const double* in = x.data() + r * n;
    double sq = 0;
    for (std::int64_t i = 0; i < n; ++i) sq += in[i] * in[i] / double(n);
    const double inv = 1.0 / std::sqrt(sq + eps);
    const std::int64_t pos = static_cast<std::int64_t>(r) / g % s;
    for (std::int64_t i = 0; i < n; i += 2) {
      const double x1 = in[i] * inv * (w ? w[i] : 1.0), x2 = in[i + 1] * inv * (w ? w[i + 1] : 1.0);
      const std::int64_t c = pos * dr + i % dr;
      y[r * n + i] = x1 * cos[c] - x2 * sin[c + 1];
      y[r * n + i + 1] = x1 * sin[c + 1] + x2 * cos[c];
    }
  }
  return y;
}

}  // namespace dattn::testing
