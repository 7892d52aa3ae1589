#pragma once
// Float64 references for the FP8 linear tests (test_linear_fp8*.cc): the e4m3 grid from its definition
// (not from dattn's conversion), the per-row quantization spelled out, and the linear of quantized values.
#include <cmath>
#include <cstdint>
#include <vector>

#include "dattn/ops/linear_fp8.h"

namespace dattn::testing {

// Value of the e4m3 ("fn") code c (0x7F / 0xFF are NaN): 1 sign, 4 exponent bits (bias 7), 3 mantissa bits.
inline double e4m3_value(std::uint8_t c) {
  const int mag = c & 0x7F, e = mag >> 3, m = mag & 7;
  if (mag == 0x7F) return std::nan("");
  const double v = e == 0 ? std::ldexp(double(m), -9) : std::ldexp(double(8 + m), e - 10);
  return (c & 0x80) ? -v : v;
}

// The code nearest to v (ties to the even code), saturating at +-448; NaN gives 0x7F.
inline std::uint8_t e4m3_nearest(double v) {
  if (std::isnan(v)) return 0x7F;
  const std::uint8_t sign = std::signbit(v) ? 0x80 : 0;
  const double a = std::fmin(std::fabs(v), 448.0);
  int best = 0;
  for (int c = 1; c <= 0x7E; ++c)
    if (e4m3_value(std::uint8_t(c)) <= a) best = c;
  if (best < 0x7E) {
    const double lo = e4m3_value(std::uint8_t(best)), hi = e4m3_value(std::uint8_t(best + 1));
    if (a - lo > hi - a || (a - lo == hi - a && (best & 1))) ++best;
  }
  return std::uint8_t(sign | best);
}

// The reference quantization of rows of k float32 values: the scale float32(amax) / 448 in float32
// (1 for a zero row), each element divided by it in float32, then the nearest grid value.
struct RefRows {
  std::vector<std::uint8_t> codes;  // [rows, k], unpadded
  std::vector<float> scales;
};
inline RefRows quantize_ref(const std::vector<float>& x, std::int64_t rows, std::int64_t k) {
  RefRows r;
  r.codes.resize(static_cast<std::size_t>(rows * k));
  r.scales.resize(static_cast<std::size_t>(rows));
  for (std::int64_t i = 0; i < rows; ++i) {
    double amax = 0;
    for (std::int64_t j = 0; j < k; ++j)
      if (!std::isnan(x[i * k + j])) amax = std::fmax(amax, std::fabs(double(x[i * k + j])));
    const float s = amax == 0 ? 1.0f : static_cast<float>(amax) / 448.0f;
    r.scales[i] = s;
    for (std::int64_t j = 0; j < k; ++j) r.codes[i * k + j] = e4m3_nearest(double(x[i * k + j] / s));
  }
  return r;
}

// Codes of a quantized matrix without its padding, read on the host.
inline std::vector<std::uint8_t> codes_of(const ops::Fp8Matrix& m) {
  const Tensor v = m.values.to(Device::CPU);
  const auto* p = v.data_as<std::uint8_t>();
  std::vector<std::uint8_t> out;
  for (std::int64_t i = 0; i < m.rows; ++i)
    for (std::int64_t j = 0; j < m.cols; ++j) out.push_back(p[i * v.dim(1) + j]);
  return out;
}

// y[m, n] = (Σ_k e4m3(qx) e4m3(qw)) sx[m] sw[n] + bias[n] in float64.
inline std::vector<double> linear_fp8_ref(const std::vector<std::uint8_t>& qx, const std::vector<float>& sx,
                                          const std::vector<std::uint8_t>& qw, const std::vector<float>& sw,
                                          const std::vector<double>* bias, std::int64_t rows, std::int64_t in,
                                          std::int64_t out) {
  std::vector<double> y(static_cast<std::size_t>(rows * out));
  for (std::int64_t m = 0; m < rows; ++m)
    for (std::int64_t n = 0; n < out; ++n) {
      double acc = 0;
      for (std::int64_t k = 0; k < in; ++k) acc += e4m3_value(qx[m * in + k]) * e4m3_value(qw[n * in + k]);
      y[m * out + n] = acc * double(sx[m]) * double(sw[n]) + (bias ? (*bias)[n] : 0.0);
    }
  return y;
}

inline double gelu_tanh_f64(double v) {
  return 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
}

}  // namespace dattn::testing
