#include "pipeline/schedulers/schedule_math.h"

#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <utility>

namespace dattn::sched {

std::vector<double> np_linspace(double start, double stop, int num) {
  std::vector<double> y(static_cast<std::size_t>(num > 0 ? num : 0));
  if (num == 1) y[0] = start;
  if (num < 2) return y;
  const double step = (stop - start) / static_cast<double>(num - 1);
  for (int i = 0; i < num; ++i) y[i] = static_cast<double>(i) * step + start;  // numpy: y *= step; y += start
  y.back() = stop;
  return y;
}

std::vector<double> shift_sigmas(const std::vector<double>& sigmas, double shift) {
  std::vector<double> out(sigmas.size());
  for (std::size_t i = 0; i < sigmas.size(); ++i) out[i] = shift * sigmas[i] / (1.0 + (shift - 1.0) * sigmas[i]);
  return out;
}

std::vector<double> stretch_to_terminal(const std::vector<double>& sigmas, double terminal) {
  std::vector<double> out(sigmas.size());
  if (sigmas.empty()) return out;
  const double scale = (1.0 - sigmas.back()) / (1.0 - terminal);
  for (std::size_t i = 0; i < sigmas.size(); ++i) out[i] = 1.0 - (1.0 - sigmas[i]) / scale;
  return out;
}

float log_f32(float x) { return static_cast<float>(std::log(static_cast<double>(x))); }
float expm1_f32(float x) { return static_cast<float>(std::expm1(static_cast<double>(x))); }

std::vector<float> solve_f32(std::vector<float> a, std::vector<float> b) {
  const std::size_t n = b.size();
  auto at = [&](std::size_t r, std::size_t c) -> float& { return a[r * n + c]; };
  std::vector<std::size_t> piv(n);
  // getrf: right-looking elimination, multipliers scaled by the pivot's reciprocal.
  for (std::size_t k = 0; k < n; ++k) {
    std::size_t p = k;
    for (std::size_t r = k + 1; r < n; ++r)
      if (std::fabs(at(r, k)) > std::fabs(at(p, k))) p = r;
    piv[k] = p;
    if (at(p, k) == 0.0f) throw std::runtime_error("singular matrix in the UniPC solver coefficients");
    if (p != k)
      for (std::size_t c = 0; c < n; ++c) std::swap(at(k, c), at(p, c));
    const float inv = 1.0f / at(k, k);
    for (std::size_t r = k + 1; r < n; ++r) at(r, k) *= inv;
    for (std::size_t r = k + 1; r < n; ++r)
      for (std::size_t c = k + 1; c < n; ++c) at(r, c) = std::fma(-at(r, k), at(k, c), at(r, c));
  }
  // getrs: row swaps, forward substitution with the unit lower factor, back substitution multiplying
  // by the reciprocal of each diagonal entry; updates are fused multiply-adds.
  for (std::size_t k = 0; k < n; ++k)
    if (piv[k] != k) std::swap(b[k], b[piv[k]]);
  for (std::size_t k = 0; k < n; ++k)
    for (std::size_t r = k + 1; r < n; ++r) b[r] = std::fma(-b[k], at(r, k), b[r]);
  for (std::size_t k = n; k-- > 0;) {
    b[k] *= 1.0f / at(k, k);
    for (std::size_t r = 0; r < k; ++r) b[r] = std::fma(-b[k], at(r, k), b[r]);
  }
  return b;
}

}  // namespace dattn::sched
