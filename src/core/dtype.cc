#include "dattn/core/dtype.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <string>
#include <type_traits>

#include "dattn/core/error.h"

// All narrowing conversions go through one integer rounder: the source value (float or double) is split
// exactly into sign * m * 2^e, and m is shifted to the target's quantum with round-to-nearest-even done on
// the integer remainder. Because the double is rounded directly (never through float), from_f64 to
// bf16 / fp16 / fp8 / int8 is correctly rounded with no double rounding.

namespace dattn {
namespace {

// A float or double split exactly: finite values are (-1)^neg * m * 2^e with m < 2^53 (m = 0 for zero).
struct Parts {
  bool neg = false;
  bool nan = false;
  bool inf = false;
  std::uint64_t m = 0;  // 0 for zero
  int e = 0;
};

Parts split(float x) {
  const std::uint32_t b = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t ef = (b >> 23) & 0xFF, mant = b & 0x7FFFFF;
  Parts p;
  p.neg = b >> 31;
  if (ef == 0xFF) {
    p.nan = mant != 0, p.inf = mant == 0;
  } else if (ef == 0) {
    p.m = mant, p.e = -149;  // subnormal (or zero)
  } else {
    p.m = mant | (1u << 23), p.e = int(ef) - 150;
  }
  return p;
}

Parts split(double x) {
  const std::uint64_t b = std::bit_cast<std::uint64_t>(x);
  const std::uint64_t ef = (b >> 52) & 0x7FF, mant = b & ((std::uint64_t{1} << 52) - 1);
  Parts p;
  p.neg = b >> 63;
  if (ef == 0x7FF) {
    p.nan = mant != 0, p.inf = mant == 0;
  } else if (ef == 0) {
    p.m = mant, p.e = -1074;
  } else {
    p.m = mant | (std::uint64_t{1} << 52), p.e = int(ef) - 1075;
  }
  return p;
}

// m / 2^r rounded to nearest, ties to even. m < 2^53, so r > 60 always gives less than one half.
std::uint64_t shift_rne(std::uint64_t m, int r) {
  if (r <= 0) return m << -r;
  if (r > 60) return 0;
  const std::uint64_t q = m >> r, rem = m & ((std::uint64_t{1} << r) - 1);
  const std::uint64_t half = std::uint64_t{1} << (r - 1);
  return (rem > half || (rem == half && (q & 1))) ? q + 1 : q;
}

// A binary floating-point format narrower than float. Magnitude encodings 0..max_finite are the finite
// values in increasing order, which is what lets a carry out of the mantissa bump the exponent.
struct Format {
  int mant_bits;
  int bias;
  int sign_shift;           // position of the sign bit
  std::uint32_t max_finite; // magnitude encoding of the largest finite value
  std::uint32_t overflow;   // what too-large values and Inf become: Inf (IEEE) or max_finite (saturating)
  std::uint32_t nan;        // quiet NaN magnitude encoding
};

constexpr Format kBF16{7, 127, 15, 0x7F7F, 0x7F80, 0x7FC0};
constexpr Format kF16{10, 15, 15, 0x7BFF, 0x7C00, 0x7E00};
constexpr Format kE4M3{3, 7, 7, 0x7E, 0x7E, 0x7F};  // fn: 0x7F is NaN, no Inf, saturating
constexpr Format kE5M2{2, 15, 7, 0x7B, 0x7B, 0x7E};  // saturating: Inf input becomes max finite too

std::uint32_t encode(const Parts& p, const Format& f) {
  const std::uint32_t sign = std::uint32_t(p.neg) << f.sign_shift;
  if (p.nan) return sign | f.nan;
  if (p.inf) return sign | f.overflow;
  if (p.m == 0) return sign;
  const int emin = 1 - f.bias;
  const int lead = p.e + int(std::bit_width(p.m)) - 1;  // exponent of the leading bit
  const int exp = std::max(lead, emin);  // below emin the quantum stays fixed: subnormals
  const std::uint64_t q = shift_rne(p.m, exp - f.mant_bits - p.e);
  // q is the significand including the implicit bit (< 2^mant_bits for subnormals); adding it to the
  // exponent field lets a rounding carry (q == 2^(mant_bits+1), or subnormal -> normal) fall through.
  // 64-bit: a double's exponent can be far beyond the format's before the overflow check.
  const std::uint64_t mag = (std::uint64_t(exp - emin) << f.mant_bits) + q;
  return sign | (mag > f.max_finite ? f.overflow : std::uint32_t(mag));
}

// Decodes a format whose subnormals are normal floats (fp16, e4m3, e5m2; not bf16), no Inf/NaN.
float decode_finite(std::uint32_t mag, bool neg, const Format& f) {
  std::uint32_t mant = mag & ((1u << f.mant_bits) - 1);
  int exp = int(mag >> f.mant_bits) - f.bias;
  if (mag >> f.mant_bits == 0) {
    if (mant == 0) return neg ? -0.0f : 0.0f;
    exp = 1 - f.bias;
    while (!(mant >> f.mant_bits)) mant <<= 1, --exp;  // normalise the subnormal
    mant &= (1u << f.mant_bits) - 1;
  }
  const std::uint32_t b = (std::uint32_t(neg) << 31) | (std::uint32_t(exp + 127) << 23) |
                          (mant << (23 - f.mant_bits));
  return std::bit_cast<float>(b);
}

float quiet_nan(bool neg, std::uint32_t payload) {
  return std::bit_cast<float>((std::uint32_t(neg) << 31) | 0x7FC00000u | payload);
}

std::int8_t encode_i8(const Parts& p) {
  if (p.nan) return 0;
  if (p.inf || p.e + int(std::bit_width(p.m)) > 8) return p.neg ? -128 : 127;  // |x| >= 256
  const std::int64_t v = std::int64_t(shift_rne(p.m, -p.e));
  return std::int8_t(std::clamp<std::int64_t>(p.neg ? -v : v, -128, 127));
}

[[noreturn]] void unsupported(DType t) {
  throw UserError("unsupported dtype (value " + std::to_string(int(t)) + ")");
}

template <typename S, typename D, typename F>
void convert(const void* src, void* dst, std::size_t n, F f) {
  const S* s = static_cast<const S*>(src);
  D* d = static_cast<D*>(dst);
  for (std::size_t i = 0; i < n; ++i) d[i] = f(s[i]);
}

// to_f32 / to_f64: every narrow type decodes exactly to float; double -> float is the hardware's RNE.
template <typename Out>
void widen(const void* src, DType t, Out* dst, std::size_t n) {
  auto cast = [](auto v) { return Out(v); };
  switch (t) {
    case DType::F32: return convert<float, Out>(src, dst, n, cast);
    case DType::F64: return convert<double, Out>(src, dst, n, cast);
    case DType::BF16: return convert<std::uint16_t, Out>(src, dst, n, bf16_to_f32);
    case DType::F16: return convert<std::uint16_t, Out>(src, dst, n, f16_to_f32);
    case DType::FP8_E4M3: return convert<std::uint8_t, Out>(src, dst, n, e4m3_to_f32);
    case DType::FP8_E5M2: return convert<std::uint8_t, Out>(src, dst, n, e5m2_to_f32);
    case DType::I8: return convert<std::int8_t, Out>(src, dst, n, cast);
  }
  unsupported(t);
}

// from_f32 / from_f64: the narrow types are rounded from the exact source value (float or double alike).
template <typename In>
void narrow(const In* src, DType t, void* dst, std::size_t n) {
  auto to = [](const Format& f) { return [&f](In v) { return encode(split(v), f); }; };
  switch (t) {
    case DType::F32: return convert<In, float>(src, dst, n, [](In v) { return static_cast<float>(v); });
    case DType::F64: return convert<In, double>(src, dst, n, [](In v) { return static_cast<double>(v); });
    case DType::BF16:
      if constexpr (std::is_same_v<In, float>)  // the bit-trick rounding below, the same bits as to(kBF16)
        return convert<In, std::uint16_t>(src, dst, n, [](float v) { return f32_to_bf16(v); });
      else
        return convert<In, std::uint16_t>(src, dst, n, to(kBF16));
    case DType::F16: return convert<In, std::uint16_t>(src, dst, n, to(kF16));
    case DType::FP8_E4M3: return convert<In, std::uint8_t>(src, dst, n, to(kE4M3));
    case DType::FP8_E5M2: return convert<In, std::uint8_t>(src, dst, n, to(kE5M2));
    case DType::I8: return convert<In, std::int8_t>(src, dst, n, [](In v) { return encode_i8(split(v)); });
  }
  unsupported(t);
}

}  // namespace

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "fp32";
    case DType::BF16: return "bf16";
    case DType::F16: return "fp16";
    case DType::F64: return "fp64";
    case DType::FP8_E4M3: return "fp8_e4m3";
    case DType::FP8_E5M2: return "fp8_e5m2";
    case DType::I8: return "int8";
  }
  unsupported(t);
}

std::optional<DType> parse_dtype(std::string_view name) {
  std::string s(name);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s == "fp32" || s == "float32" || s == "f32" || s == "float") return DType::F32;
  if (s == "bf16" || s == "bfloat16") return DType::BF16;
  if (s == "fp16" || s == "float16" || s == "f16" || s == "half") return DType::F16;
  if (s == "fp64" || s == "float64" || s == "f64" || s == "double") return DType::F64;
  if (s == "fp8_e4m3" || s == "e4m3") return DType::FP8_E4M3;
  if (s == "fp8_e5m2" || s == "e5m2") return DType::FP8_E5M2;
  if (s == "int8" || s == "i8") return DType::I8;
  return std::nullopt;
}

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::F64: return 8;
    case DType::F32: return 4;
    case DType::BF16:
    case DType::F16: return 2;
    case DType::FP8_E4M3:
    case DType::FP8_E5M2:
    case DType::I8: return 1;
  }
  unsupported(t);
}

// bf16 is float with the low 16 bits rounded off (same exponent range, subnormals included), so adding
// just under half an ulp plus the kept lsb rounds to nearest-even, and a carry reaches Inf as IEEE does;
// the same bits as encode(split(x), kBF16), checked over all 2^32 floats, at a fraction of its cost.
std::uint16_t f32_to_bf16(float x) {
  const std::uint32_t b = std::bit_cast<std::uint32_t>(x);
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) return std::uint16_t(((b >> 16) & 0x8000u) | kBF16.nan);
  return std::uint16_t((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}
std::uint16_t f32_to_f16(float x) { return std::uint16_t(encode(split(x), kF16)); }
std::uint8_t f32_to_e4m3(float x) { return std::uint8_t(encode(split(x), kE4M3)); }
std::uint8_t f32_to_e5m2(float x) { return std::uint8_t(encode(split(x), kE5M2)); }
std::int8_t f32_to_i8(float x) { return encode_i8(split(x)); }

float bf16_to_f32(std::uint16_t bits) {
  const float f = std::bit_cast<float>(std::uint32_t(bits) << 16);
  return std::isnan(f) ? quiet_nan(bits >> 15, (bits & 0x3F) << 16) : f;
}

float f16_to_f32(std::uint16_t bits) {
  const bool neg = bits >> 15;
  const std::uint32_t mag = bits & 0x7FFF;
  if (mag == 0x7C00) return neg ? -INFINITY : INFINITY;
  if (mag > 0x7C00) return quiet_nan(neg, (mag & 0x1FF) << 13);
  return decode_finite(mag, neg, kF16);
}

float e4m3_to_f32(std::uint8_t bits) {
  const bool neg = bits >> 7;
  const std::uint32_t mag = bits & 0x7F;
  return mag == 0x7F ? quiet_nan(neg, 0) : decode_finite(mag, neg, kE4M3);
}

float e5m2_to_f32(std::uint8_t bits) {
  const bool neg = bits >> 7;
  const std::uint32_t mag = bits & 0x7F;
  if (mag == 0x7C) return neg ? -INFINITY : INFINITY;
  if (mag > 0x7C) return quiet_nan(neg, 0);
  return decode_finite(mag, neg, kE5M2);
}

void to_f32(const void* src, DType t, float* dst, std::size_t n) { widen(src, t, dst, n); }
void to_f64(const void* src, DType t, double* dst, std::size_t n) { widen(src, t, dst, n); }
void from_f32(const float* src, DType t, void* dst, std::size_t n) { narrow(src, t, dst, n); }
void from_f64(const double* src, DType t, void* dst, std::size_t n) { narrow(src, t, dst, n); }

}  // namespace dattn
