// A causal convolution's weight packed on the GPU (uploaded as stored, packed by a kernel) is the
// host-packed weight bit for bit, for fp32, bf16 and fp16 checkpoints, Conv3d and Conv2d shapes, odd
// channel counts, and values that test the widening (NaN payloads, Inf, subnormals). Skipped without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "dattn/core/tensor.h"
#include "dattn/ops/conv.h"
#include "ops/conv_weight.h"
#include "support/device_case.h"

namespace dattn {
namespace {

Tensor random_weight(const Shape& shape, DType dtype, std::mt19937_64& rng) {
  std::normal_distribution<float> n(0.0f, 0.1f);
  std::vector<float> v(static_cast<std::size_t>(shape_numel(shape)));
  for (float& x : v) x = n(rng);
  Tensor t = Tensor::from_f32(v, shape, dtype);
  // Raw patterns the conversions treat specially: a signalling NaN with a payload, -Inf, the smallest
  // subnormal, -0 (written as bits so the host's rounding cannot normalise them first).
  if (dtype == DType::F32) {
    const std::uint32_t bits[] = {0x7F800123u, 0xFF800000u, 0x00000001u, 0x80000000u};
    std::memcpy(t.data(), bits, sizeof bits);
  } else {
    const std::uint16_t bits[] = {std::uint16_t(dtype == DType::BF16 ? 0x7F81u : 0x7C05u),
                                  std::uint16_t(dtype == DType::BF16 ? 0xFF80u : 0xFC00u), 0x0001u, 0x8000u};
    std::memcpy(t.data(), bits, sizeof bits);
  }
  return t;
}

TEST(ConvWeightPackCuda, GpuPackedEqualsHostPackedBitForBit) {
  DATTN_SKIP_WITHOUT_CUDA();
  std::mt19937_64 rng(3);
  const Shape shapes[] = {{13, 7, 3, 3, 3}, {16, 24, 3, 3, 3}, {12, 96, 1, 3, 3},
                          {5, 3, 1, 1, 1},  {16, 8, 3, 3},     {3, 32, 3, 3}};
  for (DType dt : {DType::F32, DType::BF16, DType::F16})
    for (const Shape& shape : shapes) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " " + shape_str(shape));
      const Tensor w = random_weight(shape, dt, rng);
      const Tensor host = ops::detail::packed_conv_weight(w, Device::CPU);
      const Tensor gpu = ops::detail::packed_conv_weight(w, Device::CUDA);
      ASSERT_EQ(gpu.device(), Device::CUDA);
      ASSERT_EQ(gpu.shape(), host.shape());
      ASSERT_EQ(gpu.dtype(), DType::F32);
      const Tensor back = gpu.to(Device::CPU);
      EXPECT_EQ(std::memcmp(back.data(), host.data(), host.bytes()), 0);
    }
}

// The whole layer as the VAEs build it from a bf16 checkpoint, in bf16 and fp32 activations: the CUDA
// convolution of a packed-on-GPU weight still matches the CPU convolution (the forward tests in
// test_causal_conv3d.cc check it against float64).
TEST(ConvWeightPackCuda, ConvolutionFromABf16CheckpointMatchesTheCpu) {
  DATTN_SKIP_WITHOUT_CUDA();
  std::mt19937_64 rng(9);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> wv(16 * 8 * 27), bv(16), xv(2 * 5 * 6 * 8);
  for (float& x : wv) x = 0.1f * n(rng);
  for (float& x : bv) x = n(rng);
  for (float& x : xv) x = n(rng);
  const Tensor w = Tensor::from_f32(wv, {16, 8, 3, 3, 3}, DType::BF16), b = Tensor::from_f32(bv, {16});
  const Tensor x = Tensor::from_f32(xv, {2, 5, 6, 8});
  const ops::CausalConv3d cpu(w, b, Device::CPU), gpu(w, b, Device::CUDA, ops::ConvMath::FP32);
  ops::CausalConvCache cc, gc;
  const std::vector<float> want = cpu.forward(x, &cc).to_f32_vector();
  const std::vector<float> got = gpu.forward(x.to(Device::CUDA), &gc).to_f32_vector();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-4f * (1.0f + std::fabs(want[i]))) << i;
}

}  // namespace
}  // namespace dattn
