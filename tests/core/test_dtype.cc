#include "dattn/core/dtype.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "dattn/core/error.h"

namespace dattn {
namespace {

// Each narrow format described independently of the implementation, so the reference below computes
// values from the definition (ldexp) rather than from the decoders under test.
struct Spec {
  const char* name;
  int mant_bits, bias, sign_shift;
  std::uint32_t max_code;  // magnitude code of the largest finite value
  std::uint32_t first_nan; // magnitude codes from here up are NaN; between the two lies Inf, if any
  bool saturating;         // out-of-range -> max finite (fp8) instead of Inf (IEEE)
  std::uint32_t (*enc)(float);
  std::uint32_t (*enc64)(double);
  float (*dec)(std::uint32_t);
};

// Scalar double -> narrow through the bulk API (the only route from double).
template <DType T, typename Bits>
Bits from_double(double x) {
  Bits b;
  from_f64(&x, T, &b, 1);
  return b;
}
std::uint32_t bf16_of(double x) { return from_double<DType::BF16, std::uint16_t>(x); }
std::uint32_t f16_of(double x) { return from_double<DType::F16, std::uint16_t>(x); }
std::uint32_t e4m3_of(double x) { return from_double<DType::FP8_E4M3, std::uint8_t>(x); }
std::uint32_t e5m2_of(double x) { return from_double<DType::FP8_E5M2, std::uint8_t>(x); }
int i8_of(double x) { return from_double<DType::I8, std::int8_t>(x); }

const Spec kSpecs[] = {
    {"bf16", 7, 127, 15, 0x7F7F, 0x7F81, false, [](float x) -> std::uint32_t { return f32_to_bf16(x); },
     bf16_of, [](std::uint32_t b) { return bf16_to_f32(std::uint16_t(b)); }},
    {"fp16", 10, 15, 15, 0x7BFF, 0x7C01, false, [](float x) -> std::uint32_t { return f32_to_f16(x); },
     f16_of, [](std::uint32_t b) { return f16_to_f32(std::uint16_t(b)); }},
    {"e4m3", 3, 7, 7, 0x7E, 0x7F, true, [](float x) -> std::uint32_t { return f32_to_e4m3(x); },
     e4m3_of, [](std::uint32_t b) { return e4m3_to_f32(std::uint8_t(b)); }},
    {"e5m2", 2, 15, 7, 0x7B, 0x7D, true, [](float x) -> std::uint32_t { return f32_to_e5m2(x); },
     e5m2_of, [](std::uint32_t b) { return e5m2_to_f32(std::uint8_t(b)); }},
};

std::uint32_t sign_bit(const Spec& s) { return 1u << s.sign_shift; }
std::uint32_t code_count(const Spec& s) { return 2u << s.sign_shift; }

// Value of a finite magnitude code from the format definition.
double ref_value(const Spec& s, std::uint32_t mag) {
  const std::uint32_t e = mag >> s.mant_bits, m = mag & ((1u << s.mant_bits) - 1);
  if (e == 0) return std::ldexp(double(m), 1 - s.bias - s.mant_bits);
  return std::ldexp(double(m | (1u << s.mant_bits)), int(e) - s.bias - s.mant_bits);
}

bool is_nan_code(const Spec& s, std::uint32_t code) { return (code & (sign_bit(s) - 1)) >= s.first_nan; }

// The expected code for a non-NaN x: the nearest finite value, ties to the even code. For IEEE formats
// the code after max_code is Inf, and it stands for 2^(emax+1) when deciding the rounding (IEEE 754 7.4).
std::uint32_t ref_encode(const Spec& s, double x) {
  const std::uint32_t sign = std::signbit(x) ? sign_bit(s) : 0;
  double a = std::fabs(x);
  const double max = ref_value(s, s.max_code);
  const double top = ref_value(s, s.max_code + 1);  // 2^(emax+1) for IEEE formats
  if (s.saturating) a = std::min(a, max);
  if (a >= top) return sign | (s.max_code + 1);
  std::uint32_t lo = 0;
  for (std::uint32_t step = 1u << 15; step; step >>= 1)  // binary search: largest code with value <= a
    if (lo + step <= s.max_code + 1 && ref_value(s, lo + step) <= a) lo += step;
  if (ref_value(s, lo) == a) return sign | lo;
  const double mid = (ref_value(s, lo) + ref_value(s, lo + 1)) / 2;  // exact: adjacent narrow values
  const std::uint32_t pick = a < mid ? lo : a > mid ? lo + 1 : (lo % 2 == 0 ? lo : lo + 1);
  return sign | pick;
}

std::uint32_t float_bits(float f) { return std::bit_cast<std::uint32_t>(f); }

TEST(DType, NamesParsingAndSizes) {
  const DType all[] = {DType::F32, DType::BF16, DType::F16, DType::F64,
                       DType::FP8_E4M3, DType::FP8_E5M2, DType::I8};
  const char* names[] = {"fp32", "bf16", "fp16", "fp64", "fp8_e4m3", "fp8_e5m2", "int8"};
  const std::size_t sizes[] = {4, 2, 2, 8, 1, 1, 1};
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ(dtype_name(all[i]), names[i]);
    EXPECT_EQ(parse_dtype(names[i]), all[i]);
    EXPECT_EQ(dtype_size(all[i]), sizes[i]);
  }
  const std::pair<const char*, DType> aliases[] = {
      {"float32", DType::F32}, {"F32", DType::F32},       {"Float", DType::F32},
      {"BFloat16", DType::BF16}, {"float16", DType::F16}, {"f16", DType::F16},
      {"HALF", DType::F16},    {"float64", DType::F64},   {"f64", DType::F64},
      {"double", DType::F64},  {"E4M3", DType::FP8_E4M3}, {"e5m2", DType::FP8_E5M2},
      {"FP8_E5M2", DType::FP8_E5M2}, {"i8", DType::I8},   {"INT8", DType::I8}};
  for (const auto& [alias, t] : aliases) EXPECT_EQ(parse_dtype(alias), t) << alias;
  for (const char* bad : {"", "fp8", "int4", "bf16 ", "float128", "e4m3fn"})
    EXPECT_FALSE(parse_dtype(bad).has_value()) << bad;
}

TEST(DType, UnknownDTypeThrowsUserError) {
  const auto bad = static_cast<DType>(99);
  float f = 0;
  double d = 0;
  std::uint64_t buf = 0;
  EXPECT_THROW(dtype_name(bad), UserError);
  EXPECT_THROW(dtype_size(bad), UserError);
  EXPECT_THROW(to_f32(&buf, bad, &f, 1), UserError);
  EXPECT_THROW(to_f64(&buf, bad, &d, 1), UserError);
  EXPECT_THROW(from_f32(&f, bad, &buf, 1), UserError);
  EXPECT_THROW(from_f64(&d, bad, &buf, 1), UserError);
}

// Decoders against the definition, every code.
TEST(DType, DecodeMatchesDefinition) {
  for (const Spec& s : kSpecs) {
    for (std::uint32_t code = 0; code < code_count(s); ++code) {
      const std::uint32_t mag = code & (sign_bit(s) - 1);
      const bool neg = code & sign_bit(s);
      const float got = s.dec(code);
      if (is_nan_code(s, code)) {
        EXPECT_TRUE(std::isnan(got)) << s.name << " " << code;
        EXPECT_TRUE(float_bits(got) & 0x00400000u) << s.name << " decodes to a quiet NaN";
      } else if (mag > s.max_code) {
        EXPECT_EQ(got, neg ? -INFINITY : INFINITY) << s.name << " " << code;
      } else {
        const double want = neg ? -ref_value(s, mag) : ref_value(s, mag);
        EXPECT_EQ(double(got), want) << s.name << " " << code;
        EXPECT_EQ(std::signbit(got), neg) << s.name << " " << code;
      }
    }
  }
}

// Decode then encode gives the same code, for every code; NaNs stay NaN with their sign.
TEST(DType, ExhaustiveRoundTrip) {
  for (const Spec& s : kSpecs) {
    int nans = 0;
    for (std::uint32_t code = 0; code < code_count(s); ++code) {
      const float f = s.dec(code);
      const std::uint32_t back = s.enc(f);
      if (std::isnan(f)) {
        ++nans;
        EXPECT_TRUE(is_nan_code(s, back)) << s.name << " " << code;
        EXPECT_EQ(back & sign_bit(s), code & sign_bit(s)) << s.name << " " << code;
      } else if (std::isinf(f) && s.saturating) {
        EXPECT_EQ(back, (code & sign_bit(s)) | s.max_code) << s.name << " Inf saturates";
      } else {
        EXPECT_EQ(back, code) << s.name << " " << code;
        if (!std::isinf(f)) {
          EXPECT_EQ(s.enc64(double(f)), code) << s.name << " " << code;
        }
      }
    }
    EXPECT_GT(nans, 0) << s.name;
  }
}

// Random fp32 inputs against the independent reference: arbitrary bit patterns (mostly far out of range)
// plus values spread over each format's exponent range, subnormals and overflow included.
TEST(DType, RandomFloatsMatchReference) {
  std::mt19937 rng(1234);
  for (const Spec& s : kSpecs) {
    const int emin = 1 - s.bias - s.mant_bits - 3, emax = int(s.max_code >> s.mant_bits) - s.bias + 2;
    std::uniform_int_distribution<int> exp_dist(std::max(emin, -149), std::min(emax, 127));
    int mismatches = 0;
    for (int i = 0; i < 400000; ++i) {
      float x;
      if (i % 2) {
        x = std::bit_cast<float>(std::uint32_t(rng()));
      } else {
        const float m = std::bit_cast<float>(std::uint32_t(0x3F800000u | (rng() & 0x7FFFFF)));  // [1, 2)
        x = std::ldexp(m, exp_dist(rng)) * (rng() & 1 ? -1.0f : 1.0f);
      }
      if (std::isnan(x)) continue;
      const std::uint32_t want = ref_encode(s, x), got = s.enc(x);
      if (got != want && ++mismatches <= 5)
        ADD_FAILURE() << s.name << " x=" << x << " (0x" << std::hex << float_bits(x) << ") got 0x" << got
                      << " want 0x" << want;
    }
    EXPECT_EQ(mismatches, 0) << s.name;
  }
}

// Every exact midpoint between adjacent finite codes goes to the even code; one float ulp either side
// goes to the nearer code. Covers the subnormal range and the top of the range.
TEST(DType, ExhaustiveTies) {
  for (const Spec& s : kSpecs) {
    for (std::uint32_t lo = 0; lo < s.max_code; ++lo) {
      const double mid_d = (ref_value(s, lo) + ref_value(s, lo + 1)) / 2;
      const float mid = float(mid_d);
      ASSERT_EQ(double(mid), mid_d) << s.name << " midpoint must be exact in fp32";
      const std::uint32_t even = lo % 2 == 0 ? lo : lo + 1;
      EXPECT_EQ(s.enc(mid), even) << s.name << " " << lo;
      EXPECT_EQ(s.enc(-mid), even | sign_bit(s)) << s.name << " " << lo;
      EXPECT_EQ(s.enc(std::nextafter(mid, 0.0f)), lo) << s.name << " " << lo;
      EXPECT_EQ(s.enc(std::nextafter(mid, INFINITY)), lo + 1) << s.name << " " << lo;
    }
  }
  // A few by hand, in case the reference and the encoder share a misunderstanding.
  EXPECT_EQ(f32_to_bf16(1.0f + 0x1p-8f), 0x3F80);         // 1 + half ulp -> 1 (even)
  EXPECT_EQ(f32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3F82);     // 1 + 1.5 ulp -> 1 + 2 ulp (even)
  EXPECT_EQ(f32_to_f16(1.0f + 0x1p-11f), 0x3C00);
  EXPECT_EQ(f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3C02);
  EXPECT_EQ(f32_to_e4m3(1.0625f), 0x38);                  // between 1 and 1.125 -> 1
  EXPECT_EQ(f32_to_e4m3(1.1875f), 0x3A);                  // between 1.125 and 1.25 -> 1.25
  EXPECT_EQ(f32_to_e5m2(1.125f), 0x3C);                   // between 1 and 1.25 -> 1
  EXPECT_EQ(f32_to_e5m2(1.375f), 0x3E);                   // between 1.25 and 1.5 -> 1.5
}

TEST(DType, Subnormals) {
  // Smallest subnormal, half of it (tie with 0 -> 0), just above half (-> smallest), 1.5x (tie -> 2).
  struct Case { const Spec& s; float min_sub; };
  for (const auto& [s, min_sub] : {Case{kSpecs[0], 0x1p-133f}, Case{kSpecs[1], 0x1p-24f},
                                   Case{kSpecs[2], 0x1p-9f}, Case{kSpecs[3], 0x1p-16f}}) {
    EXPECT_EQ(s.enc(min_sub), 1u) << s.name;
    EXPECT_EQ(s.dec(1), min_sub) << s.name;
    EXPECT_EQ(s.enc(min_sub / 2), 0u) << s.name;
    EXPECT_EQ(s.enc(-min_sub / 2), sign_bit(s)) << s.name << " underflow keeps the sign";
    EXPECT_EQ(s.enc(std::nextafter(min_sub / 2, 1.0f)), 1u) << s.name;
    EXPECT_EQ(s.enc(min_sub / 4), 0u) << s.name;
    EXPECT_EQ(s.enc(min_sub * 1.5f), 2u) << s.name;
    EXPECT_EQ(s.enc(min_sub * 2.5f), 2u) << s.name;
    // Largest subnormal plus a bit over half an ulp carries into the smallest normal.
    const std::uint32_t min_normal = 1u << s.mant_bits;
    EXPECT_EQ(s.enc(float(ref_value(s, min_normal - 1) + 0.75 * min_sub)), min_normal) << s.name;
  }
}

TEST(DType, OverflowAndInfinity) {
  const float inf = INFINITY;
  // bf16 / fp16 overflow to Inf like IEEE: the midpoint above max finite already rounds to Inf.
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_EQ(f32_to_bf16(-std::numeric_limits<float>::max()), 0xFF80);
  EXPECT_EQ(f32_to_bf16(0x1.FEp127f), 0x7F7F);
  EXPECT_EQ(f32_to_bf16(0x1.FFp127f), 0x7F80);
  EXPECT_EQ(f32_to_bf16(std::nextafter(0x1.FFp127f, 0.0f)), 0x7F7F);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7BFF);
  EXPECT_EQ(f32_to_f16(65519.99f), 0x7BFF);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7C00);
  EXPECT_EQ(f32_to_f16(-1e10f), 0xFC00);
  EXPECT_EQ(f32_to_bf16(inf), 0x7F80);
  EXPECT_EQ(f32_to_bf16(-inf), 0xFF80);
  EXPECT_EQ(f32_to_f16(inf), 0x7C00);
  EXPECT_EQ(f32_to_f16(-inf), 0xFC00);
  // fp8 saturates, Inf included.
  EXPECT_EQ(f32_to_e4m3(448.0f), 0x7E);
  EXPECT_EQ(f32_to_e4m3(464.0f), 0x7E);  // would round to 480 (the NaN code) without saturation
  EXPECT_EQ(f32_to_e4m3(1e30f), 0x7E);
  EXPECT_EQ(f32_to_e4m3(inf), 0x7E);
  EXPECT_EQ(f32_to_e4m3(-inf), 0xFE);
  EXPECT_EQ(e4m3_to_f32(0x7E), 448.0f);
  EXPECT_EQ(f32_to_e5m2(57344.0f), 0x7B);
  EXPECT_EQ(f32_to_e5m2(61440.0f), 0x7B);
  EXPECT_EQ(f32_to_e5m2(1e30f), 0x7B);
  EXPECT_EQ(f32_to_e5m2(inf), 0x7B);
  EXPECT_EQ(f32_to_e5m2(-inf), 0xFB);
  EXPECT_EQ(e5m2_to_f32(0x7B), 57344.0f);
  EXPECT_EQ(e5m2_to_f32(0x7C), inf);
  EXPECT_EQ(e5m2_to_f32(0xFC), -inf);
}

TEST(DType, NanAndSignedZero) {
  const float nans[] = {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
                        std::bit_cast<float>(0x7F800001u), std::bit_cast<float>(0xFFBFFFFFu)};
  for (const float x : nans) {
    const bool neg = std::signbit(x);
    EXPECT_EQ(f32_to_bf16(x) & 0xFFC0, neg ? 0xFFC0 : 0x7FC0);  // quiet bit set, sign kept
    EXPECT_EQ(f32_to_f16(x) & 0xFE00, neg ? 0xFE00 : 0x7E00);
    EXPECT_EQ(f32_to_e4m3(x), neg ? 0xFF : 0x7F);
    EXPECT_TRUE(is_nan_code(kSpecs[3], f32_to_e5m2(x)));
    EXPECT_EQ(f32_to_e5m2(x) & 0x80, neg ? 0x80 : 0);
    EXPECT_EQ(f32_to_i8(x), 0);
  }
  for (const Spec& s : kSpecs) {
    EXPECT_EQ(s.enc(0.0f), 0u) << s.name;
    EXPECT_EQ(s.enc(-0.0f), sign_bit(s)) << s.name;
    EXPECT_EQ(s.enc64(-0.0), sign_bit(s)) << s.name;
    EXPECT_TRUE(std::signbit(s.dec(sign_bit(s)))) << s.name;
    EXPECT_TRUE(std::isnan(s.dec(s.enc64(std::nan(""))))) << s.name;
  }
}

TEST(DType, Int8) {
  const std::pair<float, int> cases[] = {
      {0.5f, 0},    {1.5f, 2},     {2.5f, 2},     {-0.5f, 0},      {-1.5f, -2},    {-2.5f, -2},
      {0.49999997f, 0}, {0.50000006f, 1}, {126.5f, 126}, {127.4f, 127}, {127.5f, 127}, {-127.5f, -128},
      {-128.5f, -128}, {200.0f, 127}, {-1000.0f, -128}, {1e30f, 127}, {-1e30f, -128}, {INFINITY, 127},
      {-INFINITY, -128}, {-0.0f, 0}, {1e-30f, 0},    {3.0f, 3},     {-7.0f, -7}};
  for (const auto& [x, want] : cases) EXPECT_EQ(f32_to_i8(x), want) << x;
  // Random values against nearbyint (round-to-nearest-even in the default rounding mode).
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-300.0f, 300.0f);
  for (int i = 0; i < 100000; ++i) {
    const float x = i % 4 ? dist(rng) : std::round(dist(rng) * 2) / 2;  // every 4th one a .5 tie
    EXPECT_EQ(f32_to_i8(x), std::clamp<float>(std::nearbyint(x), -128, 127)) << x;
  }
}

// from_f64 rounds the double once. Going through float first would round twice and get these wrong.
TEST(DType, DoubleIsRoundedOnce) {
  const double just_above_tie = 1.0 + 0x1p-8 + 0x1p-30;  // float(x) is exactly a bf16 tie -> 1.0
  ASSERT_EQ(f32_to_bf16(float(just_above_tie)), 0x3F80);
  EXPECT_EQ(bf16_of(just_above_tie), 0x3F81);
  EXPECT_EQ(f16_of(1.0 + 0x1p-11 + 0x1p-40), 0x3C01);
  EXPECT_EQ(e4m3_of(1.0625 + 0x1p-40), 0x39);
  EXPECT_EQ(e5m2_of(1.125 + 0x1p-40), 0x3D);
  EXPECT_EQ(i8_of(0.5 + 0x1p-40), 1);
  EXPECT_EQ(i8_of(-2.5 - 0x1p-40), -3);
  EXPECT_EQ(bf16_of(1e300), 0x7F80);   // far beyond float range
  EXPECT_EQ(e4m3_of(-1e300), 0xFE);
  EXPECT_EQ(f16_of(1e-300), 0x0000);

  std::mt19937_64 rng(99);
  for (const Spec& s : kSpecs) {
    const int emin = 1 - s.bias - s.mant_bits - 3, emax = int(s.max_code >> s.mant_bits) - s.bias + 2;
    std::uniform_int_distribution<int> exp_dist(emin, emax);
    int mismatches = 0;
    for (int i = 0; i < 200000; ++i) {
      const double m = std::bit_cast<double>(0x3FF0000000000000ull | (rng() >> 12));  // [1, 2)
      const double x = std::ldexp(m, exp_dist(rng)) * (rng() & 1 ? -1.0 : 1.0);
      const std::uint32_t want = ref_encode(s, x), got = s.enc64(x);
      if (got != want && ++mismatches <= 5)
        ADD_FAILURE() << s.name << " x=" << x << " got 0x" << std::hex << got << " want 0x" << want;
    }
    EXPECT_EQ(mismatches, 0) << s.name;
  }
}

// The bulk functions agree with the scalar ones for every dtype, in both directions.
TEST(DType, BulkConversions) {
  const std::vector<double> xs = {0.0, -0.0, 1.0, -2.5, 0.1, 3.14159, 1e-6, -448.0, 500.0, 70000.0,
                                  1e-40, 1e300, INFINITY, -INFINITY};
  const std::size_t n = xs.size();
  std::vector<float> xf(n);
  for (std::size_t i = 0; i < n; ++i) xf[i] = float(xs[i]);
  for (DType t : {DType::F32, DType::BF16, DType::F16, DType::F64, DType::FP8_E4M3, DType::FP8_E5M2,
                  DType::I8}) {
    std::vector<unsigned char> a(n * dtype_size(t)), b(n * dtype_size(t));
    from_f32(xf.data(), t, a.data(), n);
    from_f64(xs.data(), t, b.data(), n);
    std::vector<float> af(n);
    std::vector<double> ad(n);
    to_f32(a.data(), t, af.data(), n);
    to_f64(a.data(), t, ad.data(), n);
    for (std::size_t i = 0; i < n; ++i) {
      float want;  // scalar route from the float input
      switch (t) {
        case DType::F32: case DType::F64: want = xf[i]; break;
        case DType::BF16: want = bf16_to_f32(f32_to_bf16(xf[i])); break;
        case DType::F16: want = f16_to_f32(f32_to_f16(xf[i])); break;
        case DType::FP8_E4M3: want = e4m3_to_f32(f32_to_e4m3(xf[i])); break;
        case DType::FP8_E5M2: want = e5m2_to_f32(f32_to_e5m2(xf[i])); break;
        default: want = float(f32_to_i8(xf[i])); break;
      }
      EXPECT_EQ(float_bits(af[i]), float_bits(want)) << dtype_name(t) << " " << xs[i];
      EXPECT_EQ(std::bit_cast<std::uint64_t>(ad[i]), std::bit_cast<std::uint64_t>(double(want)))
          << dtype_name(t) << " " << xs[i];
    }
    // These inputs are exact in float or round the same either way, except fp64 keeps the double.
    if (t != DType::F64) {
      EXPECT_EQ(a, b) << dtype_name(t);
    } else {
      std::vector<double> bd(n);
      to_f64(b.data(), t, bd.data(), n);
      for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(bd[i], xs[i]);
    }
  }
}

}  // namespace
}  // namespace dattn
