#pragma once
// Device twins of dtype.cc's float32 <-> bf16 / fp16 conversions, bit for bit (rounding to nearest even,
// overflow to Inf, NaN quieted with the host's payload rule), so weights converted on the GPU at load
// are the weights a host conversion gives. Follow dtype.cc when it changes; tests/core checks them
// against it over every 16-bit pattern and a spread of float32 ones.
#include <cstdint>

namespace dattn::cuda {

__device__ __forceinline__ float quiet_nan_f32(std::uint32_t neg, std::uint32_t payload) {
  return __uint_as_float((neg << 31) | 0x7FC00000u | payload);
}

__device__ __forceinline__ float bf16_bits_to_f32(std::uint16_t bits) {
  const std::uint32_t b = std::uint32_t(bits) << 16;
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) return quiet_nan_f32(bits >> 15, (bits & 0x3Fu) << 16);
  return __uint_as_float(b);
}

__device__ __forceinline__ float f16_bits_to_f32(std::uint16_t bits) {
  const std::uint32_t neg = bits >> 15, mag = bits & 0x7FFFu;
  if (mag == 0x7C00u) return __uint_as_float((neg << 31) | 0x7F800000u);
  if (mag > 0x7C00u) return quiet_nan_f32(neg, (mag & 0x1FFu) << 13);
  std::uint32_t mant = mag & 0x3FFu;
  int exp = int(mag >> 10) - 15;
  if ((mag >> 10) == 0) {
    if (mant == 0) return __uint_as_float(neg << 31);
    exp = -14;
    while (!(mant >> 10)) mant <<= 1, --exp;  // normalise the subnormal
    mant &= 0x3FFu;
  }
  return __uint_as_float((neg << 31) | (std::uint32_t(exp + 127) << 23) | (mant << 13));
}

// dtype.cc's f32_to_bf16: adding just under half an ulp plus the kept lsb rounds to nearest even.
__device__ __forceinline__ std::uint16_t f32_to_bf16_bits(float x) {
  const std::uint32_t b = __float_as_uint(x);
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) return std::uint16_t(((b >> 16) & 0x8000u) | 0x7FC0u);
  return std::uint16_t((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}

// dtype.cc's encode(split(x), kF16): the float split exactly into m * 2^e, m shifted to fp16's quantum
// with round-to-nearest-even on the integer remainder, a carry falling through into the exponent.
__device__ __forceinline__ std::uint16_t f32_to_f16_bits(float x) {
  const std::uint32_t b = __float_as_uint(x);
  const std::uint32_t sign = (b >> 16) & 0x8000u, ef = (b >> 23) & 0xFFu, mant = b & 0x7FFFFFu;
  if (ef == 0xFFu) return std::uint16_t(sign | (mant ? 0x7E00u : 0x7C00u));
  const std::uint64_t m = ef == 0 ? mant : (mant | (1u << 23));
  const int e = ef == 0 ? -149 : int(ef) - 150;
  if (m == 0) return std::uint16_t(sign);
  constexpr int kEmin = -14, kMantBits = 10;
  const int lead = e + (64 - __clzll(static_cast<long long>(m))) - 1;
  const int exp = lead > kEmin ? lead : kEmin;
  const int r = exp - kMantBits - e;
  std::uint64_t q;
  if (r <= 0) {
    q = m << -r;
  } else if (r > 60) {
    q = 0;
  } else {
    const std::uint64_t kept = m >> r, rem = m & ((std::uint64_t{1} << r) - 1), half = std::uint64_t{1} << (r - 1);
    q = (rem > half || (rem == half && (kept & 1))) ? kept + 1 : kept;
  }
  const std::uint64_t mag = (std::uint64_t(exp - kEmin) << kMantBits) + q;
  return std::uint16_t(sign | (mag > 0x7BFFu ? 0x7C00u : std::uint32_t(mag)));
}

}  // namespace dattn::cuda
