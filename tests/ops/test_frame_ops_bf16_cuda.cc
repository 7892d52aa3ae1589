// The causal VAEs' frame ops with bfloat16 frames on CUDA (the bf16 decode), in a poisoning context,
// against the same op in float32 on the CPU (itself tested against float64 references: test_frame_ops.cc,
// test_hv15_frame_ops.cc) applied to the bf16-rounded inputs. Copies (upsampling, the float32 video write)
// must be exact; an op that computes rounds its float32 result to bf16 once: at most 2^-9 relative per
// element, so relative L2 below 4e-3. normalize_channels in every fp32/bf16 mix, on the 8-wide and the
// scalar paths. Skipped without a CUDA device.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "dattn/core/error.h"
#include "dattn/ops/combine.h"
#include "dattn/ops/frames.h"
#include "dattn/ops/norm.h"
#include "ops/frame_test_util.h"

namespace dattn {
namespace {

using testing::compare_f64;
using testing::FrameOpDevice;
using testing::random_f32;
using i64 = std::int64_t;

constexpr double kOneRounding = 4e-3;

// A random tensor whose values are bf16-representable (so the CPU's float32 op reads what CUDA's reads).
Tensor random_bf16_values(const Shape& shape, std::mt19937& rng) {
  return random_f32(shape, rng).to(DType::BF16).to(DType::F32);
}

Tensor bf16_on_cuda(const FrameOpDevice& dev, const Tensor& host) { return ops::cast(dev.put(host), DType::BF16); }

TEST(FrameOpsBf16Cuda, UpsampleIsAnExactCopy) {
  DATTN_SKIP_WITHOUT_CUDA();
  std::mt19937 rng(1);
  const FrameOpDevice dev(Device::CUDA);
  for (const auto& [c, parts] : std::vector<std::pair<i64, int>>{{16, 1}, {16, 2}, {6, 2}, {3, 1}}) {
    SCOPED_TRACE("c " + std::to_string(c) + " parts " + std::to_string(parts));
    const Tensor x = random_bf16_values({2, 3, 5, c}, rng);
    const Tensor y = ops::upsample_nearest2x(bf16_on_cuda(dev, x), parts);
    EXPECT_EQ(y.dtype(), DType::BF16);
    EXPECT_EQ(compare_f64(y, ops::upsample_nearest2x(x, parts).to_f64_vector(), 0.0), "");
  }
}

TEST(FrameOpsBf16Cuda, AddDupUpRoundsOnce) {
  DATTN_SKIP_WITHOUT_CUDA();
  std::mt19937 rng(2);
  const FrameOpDevice dev(Device::CUDA);
  // in [T, H, W, Cin] onto out [T ft - drop, H fs, W fs, Cout]: Wan2.2's temporal shortcut, its first chunk.
  const i64 t = 2, h = 3, w = 4, cin = 16, cout = 8;
  const int ft = 2, fs = 2, drop = 1;
  const Tensor in = random_bf16_values({t, h, w, cin}, rng);
  Tensor out_cpu = random_bf16_values({t * ft - drop, h * fs, w * fs, cout}, rng);
  Tensor out_gpu = bf16_on_cuda(dev, out_cpu);
  ops::add_dup_up(out_gpu, bf16_on_cuda(dev, in), ft, fs, drop);
  ops::add_dup_up(out_cpu, in, ft, fs, drop);
  EXPECT_EQ(out_gpu.dtype(), DType::BF16);
  EXPECT_EQ(compare_f64(out_gpu, out_cpu.to_f64_vector(), kOneRounding), "");
}

TEST(FrameOpsBf16Cuda, DcaeUpsampleRoundsOnce) {
  DATTN_SKIP_WITHOUT_CUDA();
  std::mt19937 rng(3);
  const FrameOpDevice dev(Device::CUDA);
  for (const bool first : {true, false}) {
    SCOPED_TRACE(first ? "first frame" : "later frames");
    const i64 t = 2, cout = 8, cin = 16;
    const Tensor h = random_bf16_values({t, 3, 4, 4 * 2 * cout}, rng), x = random_bf16_values({t, 3, 4, cin}, rng);
    const Tensor y = ops::dcae_upsample(bf16_on_cuda(dev, h), bf16_on_cuda(dev, x), 2, first);
    EXPECT_EQ(y.dtype(), DType::BF16);
    EXPECT_EQ(compare_f64(y, ops::dcae_upsample(h, x, 2, first).to_f64_vector(), kOneRounding), "");
  }
}

TEST(FrameOpsBf16Cuda, UnpatchifiedWriteOfABf16ChunkIsExact) {
  DATTN_SKIP_WITHOUT_CUDA();
  std::mt19937 rng(4);
  const FrameOpDevice dev(Device::CUDA);
  for (const bool clamp : {true, false}) {
    const Tensor chunk = random_bf16_values({2, 3, 4, 3 * 2 * 2}, rng);
    Tensor cpu = Tensor::zeros({1, 3, 3, 6, 8}, DType::F32);
    Tensor gpu = dev.put(cpu);
    ops::write_unpatchified_frames(chunk, 2, cpu, 0, 1, clamp);
    ops::write_unpatchified_frames(bf16_on_cuda(dev, chunk), 2, gpu, 0, 1, clamp);
    EXPECT_EQ(gpu.dtype(), DType::F32);
    EXPECT_EQ(compare_f64(gpu, cpu.to_f64_vector(), 0.0), "") << (clamp ? "clamped" : "unclamped");
  }
}

TEST(FrameOpsBf16Cuda, NormalizeChannelsInEveryDtypeMix) {
  DATTN_SKIP_WITHOUT_CUDA();
  std::mt19937 rng(5);
  const FrameOpDevice dev(Device::CUDA);
  for (const i64 c : {16, 12, 3}) {  // 8-wide path, scalar paths
    const Tensor x = random_bf16_values({2, 3, 5, c}, rng), gain = random_f32({c}, rng);
    for (const bool silu : {false, true}) {
      const std::vector<double> ref = ops::normalize_channels(x, gain, silu).to_f64_vector();
      for (const auto& [in, out] : std::vector<std::pair<DType, DType>>{
               {DType::BF16, DType::BF16}, {DType::BF16, DType::F32}, {DType::F32, DType::BF16}}) {
        SCOPED_TRACE("c " + std::to_string(c) + (silu ? " silu " : " ") + std::string(dtype_name(in)) + " -> " +
                     std::string(dtype_name(out)));
        const Tensor xd = in == DType::BF16 ? bf16_on_cuda(dev, x) : dev.put(x);
        const Tensor y = ops::normalize_channels(xd, dev.put(gain), silu, out);
        EXPECT_EQ(y.dtype(), out);
        EXPECT_EQ(compare_f64(y, ref, out == DType::F32 ? 1e-6 : kOneRounding), "");
      }
    }
  }
}

// bf16 frames are a CUDA dtype: the CPU ops say so.
TEST(FrameOpsBf16Cuda, Bf16OnTheCpuIsAClearError) {
  std::mt19937 rng(6);
  const Tensor x = random_f32({1, 2, 2, 8}, rng).to(DType::BF16);
  EXPECT_THROW(ops::upsample_nearest2x(x), UserError);
  EXPECT_THROW(ops::normalize_channels(x, random_f32({8}, rng), false), UserError);
  EXPECT_THROW(ops::normalize_channels(x.to(DType::F32), random_f32({8}, rng), false, DType::BF16), UserError);
}

}  // namespace
}  // namespace dattn
