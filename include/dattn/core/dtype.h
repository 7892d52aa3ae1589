#pragma once
// Element types and their exact conversions. Every narrowing conversion rounds to nearest, ties to even.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace dattn {

enum class DType { F32, BF16, F16, F64, FP8_E4M3, FP8_E5M2, I8 };

// Canonical short names: fp32, bf16, fp16, fp64, fp8_e4m3, fp8_e5m2, int8.
std::string_view dtype_name(DType t);
// Accepts the canonical names and the common aliases (float32, f32, bfloat16, float16, half, float64).
std::optional<DType> parse_dtype(std::string_view name);
std::size_t dtype_size(DType t);

// bf16: NaN stays NaN (quiet), overflow rounds to Inf as IEEE does.
std::uint16_t f32_to_bf16(float x);
float bf16_to_f32(std::uint16_t bits);
// fp16 (IEEE binary16): subnormals kept, overflow to Inf, NaN stays NaN.
std::uint16_t f32_to_f16(float x);
float f16_to_f32(std::uint16_t bits);
// fp8 e4m3 ("fn": no Inf, one NaN encoding per sign, max 448). Saturating: finite values and Inf
// beyond 448 become +-448; NaN becomes NaN (0x7F / 0xFF). This matches cvt.rn.satfinite on the GPU.
std::uint8_t f32_to_e4m3(float x);
float e4m3_to_f32(std::uint8_t bits);
// fp8 e5m2 (IEEE-like: Inf and NaN exist, max finite 57344). Saturating like e4m3: out-of-range finite
// values and Inf become +-57344; NaN stays NaN.
std::uint8_t f32_to_e5m2(float x);
float e5m2_to_f32(std::uint8_t bits);
// int8: round to nearest even, saturate to [-128, 127]; NaN becomes 0.
std::int8_t f32_to_i8(float x);

// Bulk conversions between a buffer of type t and float / double. Unsupported t throws UserError.
void to_f32(const void* src, DType t, float* dst, std::size_t n);
void from_f32(const float* src, DType t, void* dst, std::size_t n);
void to_f64(const void* src, DType t, double* dst, std::size_t n);
void from_f64(const double* src, DType t, void* dst, std::size_t n);

}  // namespace dattn
