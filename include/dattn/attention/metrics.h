#pragma once
// Error measures between an output and a reference (both as doubles).
#include <cstddef>
#include <string>

namespace dattn {

struct ErrorStats {
  double rel_l2 = 0;   // ||a - b|| / ||b||  (0 when both are zero)
  double rel_l1 = 0;   // sum|a - b| / sum|b|
  double max_abs = 0;  // max |a - b|
  double cosine = 1;   // a.b / (|a| |b|)  (1 when both are zero)
  std::size_t nonfinite = 0;  // NaN or Inf entries in a
};

ErrorStats compare(const double* a, const double* b, std::size_t n);
std::string describe(const ErrorStats& s);  // "rel_l2=1.2e-07 max_abs=3.1e-07 cos=1.000000"

}  // namespace dattn
