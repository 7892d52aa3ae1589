#include "dattn/attention/metrics.h"

#include <cmath>
#include <cstdio>

namespace dattn {

ErrorStats compare(const double* a, const double* b, std::size_t n) {
  ErrorStats s;
  double diff2 = 0, ref2 = 0, diff1 = 0, ref1 = 0, dot = 0, a2 = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(a[i])) {
      ++s.nonfinite;
      continue;
    }
    const double d = a[i] - b[i];
    diff2 += d * d;
    ref2 += b[i] * b[i];
    diff1 += std::fabs(d);
    ref1 += std::fabs(b[i]);
    dot += a[i] * b[i];
    a2 += a[i] * a[i];
    if (std::fabs(d) > s.max_abs) s.max_abs = std::fabs(d);
  }
  // Both-zero outputs (e.g. fully masked rows only) agree perfectly; a zero reference with a non-zero
  // output is an infinite relative error.
  s.rel_l2 = ref2 > 0 ? std::sqrt(diff2 / ref2) : (diff2 > 0 ? INFINITY : 0.0);
  s.rel_l1 = ref1 > 0 ? diff1 / ref1 : (diff1 > 0 ? INFINITY : 0.0);
  s.cosine = (a2 > 0 && ref2 > 0) ? dot / std::sqrt(a2 * ref2) : (a2 == ref2 ? 1.0 : 0.0);
  if (s.nonfinite) {
    s.rel_l2 = s.rel_l1 = s.max_abs = INFINITY;
    s.cosine = 0;
  }
  return s;
}

std::string describe(const ErrorStats& s) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "rel_l2=%.2e rel_l1=%.2e max_abs=%.2e cos=%.6f", s.rel_l2, s.rel_l1,
                s.max_abs, s.cosine);
  std::string out = buf;
  if (s.nonfinite) out += " nonfinite=" + std::to_string(s.nonfinite);
  return out;
}

}  // namespace dattn
