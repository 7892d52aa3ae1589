// count_nonfinite on the CPU: one parallel pass, reading each element in its own dtype.
#include <cmath>
#include <cstdint>

#include "ops/cpu/finite_cpu.h"

namespace dattn::ops::cpu {
namespace {

// bf16 and fp16 are non-finite exactly when their exponent bits are all ones; NaN when the mantissa
// is not zero besides.
template <std::uint16_t kExp, std::uint16_t kMantissa>
NonFinite count_half(const std::uint16_t* p, std::int64_t n) {
  std::int64_t count = 0, nan = 0;
#pragma omp parallel for reduction(+ : count, nan) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    const bool special = (p[i] & kExp) == kExp;
    count += special;
    nan += special && (p[i] & kMantissa) != 0;
  }
  return {count, nan};
}

template <class T>
NonFinite count_float(const T* p, std::int64_t n) {
  std::int64_t count = 0, nan = 0;
#pragma omp parallel for reduction(+ : count, nan) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    count += !std::isfinite(p[i]);
    nan += std::isnan(p[i]);
  }
  return {count, nan};
}

}  // namespace

NonFinite count_nonfinite(const Tensor& x) {
  const std::int64_t n = x.numel();
  switch (x.dtype()) {
    case DType::F64: return count_float(x.data_as<double>(), n);
    case DType::BF16: return count_half<0x7F80, 0x007F>(x.data_as<std::uint16_t>(), n);
    case DType::F16: return count_half<0x7C00, 0x03FF>(x.data_as<std::uint16_t>(), n);
    default: return count_float(x.data_as<float>(), n);
  }
}

}  // namespace dattn::ops::cpu
