// The GPU's dtype conversions (core/cuda/dtype_convert.cuh) compiled for the host, with the three CUDA
// intrinsics they use stood in for, against dtype.cc: the same bits for every 16-bit pattern and a spread
// of float32 ones (every high half at the rounding edges of the low half, and random patterns). Runs
// without a GPU; WeightUploadCuda checks the kernels themselves on one. (All 2^32 float32 patterns were
// checked this way once, 2026-12-02: no difference.)
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#define __device__
#define __forceinline__ inline
namespace {
inline float __uint_as_float(std::uint32_t u) { return std::bit_cast<float>(u); }
inline std::uint32_t __float_as_uint(float f) { return std::bit_cast<std::uint32_t>(f); }
inline int __clzll(long long x) { return __builtin_clzll(static_cast<unsigned long long>(x)); }
}  // namespace
#include "core/cuda/dtype_convert.cuh"
#undef __device__
#undef __forceinline__

#include "dattn/core/dtype.h"

namespace dattn {
namespace {

bool same(float a, float b) { return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b); }

TEST(DtypeConvertPort, SixteenBitPatternsMatchTheHost) {
  for (std::uint32_t i = 0; i < 65536; ++i) {
    const auto h = static_cast<std::uint16_t>(i);
    ASSERT_TRUE(same(cuda::bf16_bits_to_f32(h), bf16_to_f32(h))) << std::hex << "bf16 " << i;
    ASSERT_TRUE(same(cuda::f16_bits_to_f32(h), f16_to_f32(h))) << std::hex << "fp16 " << i;
    ASSERT_EQ(cuda::f32_to_f16_bits(cuda::bf16_bits_to_f32(h)), f32_to_f16(bf16_to_f32(h))) << std::hex << i;
    ASSERT_EQ(cuda::f32_to_bf16_bits(cuda::f16_bits_to_f32(h)), f32_to_bf16(f16_to_f32(h))) << std::hex << i;
  }
}

TEST(DtypeConvertPort, Float32PatternsMatchTheHost) {
  std::vector<std::uint32_t> bits;
  for (std::uint32_t hi = 0; hi < 65536; ++hi)
    for (std::uint32_t lo : {0x0000u, 0x0001u, 0x0FFFu, 0x1000u, 0x1001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu})
      bits.push_back(hi << 16 | lo);
  std::mt19937_64 rng(2);
  for (int i = 0; i < (1 << 20); ++i) bits.push_back(static_cast<std::uint32_t>(rng()));
  std::vector<float> x(bits.size());
  std::memcpy(x.data(), bits.data(), bits.size() * 4);
  std::vector<std::uint16_t> f16(x.size()), bf16(x.size());
  from_f32(x.data(), DType::F16, f16.data(), x.size());  // the bulk path Tensor::to takes
  from_f32(x.data(), DType::BF16, bf16.data(), x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(cuda::f32_to_f16_bits(x[i]), f16[i]) << std::hex << bits[i];
    ASSERT_EQ(cuda::f32_to_bf16_bits(x[i]), bf16[i]) << std::hex << bits[i];
  }
}

}  // namespace
}  // namespace dattn
