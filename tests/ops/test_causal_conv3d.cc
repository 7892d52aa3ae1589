// ops::CausalConv3d on the CPU and CUDA against a float64 causal convolution of the whole stream: the
// stream cut into chunks of several sizes goes through the frame cache, with and without the fused norm
// prologue, for the kernels the causal VAEs use (3x3x3, time-only 3x1x1, 1x1x1, per-frame 2D 3x3), channel
// counts that are and are not multiples of 4, with zero and with edge-replicating (HunyuanVideo-1.5)
// padding. CUDA runs in a poisoning context (frame_test_util.h). bf16 activations (CUDA only) against the
// same float64 convolution of the bf16-rounded input: cuDNN's bf16 path where both channel counts are
// multiples of 8, float32 (output float32) where not.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "dattn/core/error.h"
#include "dattn/ops/combine.h"
#include "dattn/ops/conv.h"
#include "ops/frame_test_util.h"

namespace dattn {
namespace {

using testing::compare_f64;
using testing::FrameOpDevice;
using testing::random_f32;

struct ConvCase {
  const char* name;
  int cin, cout, kt, k;
  bool conv2d;
  int h, w;
  std::vector<int> chunks;  // frames per forward call
  bool norm;
  ops::CausalPad pad = ops::CausalPad::Zeros;
};

// The input of the convolution: x, or SiLU(F.normalize(x) * gain) per pixel, in double.
std::vector<double> prologue(const std::vector<double>& x, const std::vector<double>& gain, int c, bool norm) {
  if (!norm) return x;
  std::vector<double> y(x.size());
  for (std::size_t p = 0; p < x.size() / c; ++p) {
    double s = 0;
    for (int i = 0; i < c; ++i) s += x[p * c + i] * x[p * c + i];
    const double inv = 1.0 / std::max(std::sqrt(s), 1e-12);
    for (int i = 0; i < c; ++i) {
      const double v = x[p * c + i] * inv * gain[i];
      y[p * c + i] = v / (1.0 + std::exp(-v));
    }
  }
  return y;
}

// Causal: output frame t reads input frames t - kt + 1 .. t; before the first, zeros (Zeros) or the first
// frame (Replicate: F.pad mode "replicate"); in space zeros or the nearest edge pixel likewise.
std::vector<double> reference(const ConvCase& c, const std::vector<double>& in, int frames, const std::vector<double>& w,
                              const std::vector<double>& b) {
  const int p = (c.k - 1) / 2;
  std::vector<double> out(static_cast<std::size_t>(frames) * c.h * c.w * c.cout);
  for (int t = 0; t < frames; ++t)
    for (int y = 0; y < c.h; ++y)
      for (int x = 0; x < c.w; ++x)
        for (int co = 0; co < c.cout; ++co) {
          double acc = b[co];
          for (int dt = 0; dt < c.kt; ++dt) {
            const bool rep = c.pad == ops::CausalPad::Replicate;
            int ti = t - (c.kt - 1) + dt;
            if (ti < 0 && !rep) continue;
            ti = std::max(ti, 0);
            for (int ky = 0; ky < c.k; ++ky)
              for (int kx = 0; kx < c.k; ++kx) {
                int iy = y + ky - p, ix = x + kx - p;
                if (rep) iy = std::clamp(iy, 0, c.h - 1), ix = std::clamp(ix, 0, c.w - 1);
                if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w) continue;
                for (int ci = 0; ci < c.cin; ++ci)
                  acc += in[((static_cast<std::size_t>(ti) * c.h + iy) * c.w + ix) * c.cin + ci] *
                         w[(((static_cast<std::size_t>(co) * c.cin + ci) * c.kt + dt) * c.k + ky) * c.k + kx];
              }
          }
          out[((static_cast<std::size_t>(t) * c.h + y) * c.w + x) * c.cout + co] = acc;
        }
  return out;
}

void run(const ConvCase& c, Device device, ops::ConvMath math, double limit, std::uint32_t seed,
         DType dtype = DType::F32) {
  SCOPED_TRACE(std::string(c.name) + " on " + std::string(device_name(device)) +
               (dtype == DType::BF16          ? " bf16"
                : math == ops::ConvMath::TF32 ? " tf32"
                                              : " fp32"));
  std::mt19937 rng(seed);
  const Shape wshape = c.conv2d ? Shape{c.cout, c.cin, c.k, c.k} : Shape{c.cout, c.cin, c.kt, c.k, c.k};
  const Tensor w = random_f32(wshape, rng, 0.3f), b = random_f32({c.cout}, rng);
  const Tensor gain = random_f32({c.cin}, rng);
  int frames = 0;
  for (int n : c.chunks) frames += n;
  // bf16: the input rounded once here, so the reference convolves exactly what the op receives.
  const Tensor x = random_f32({frames, c.h, c.w, c.cin}, rng).to(dtype).to(DType::F32);

  const FrameOpDevice dev(device);
  const ops::CausalConv3d conv(w, b, device, math, c.pad, dtype);
  const bool bf16_path = dtype == DType::BF16 && c.cin % 8 == 0 && c.cout % 8 == 0;
  EXPECT_EQ(conv.out_dtype(), bf16_path ? DType::BF16 : DType::F32);
  ops::CausalConvCache cache;
  std::vector<float> got;
  int t0 = 0;
  for (int n : c.chunks) {
    const Tensor chunk = dev.put(x.narrow0(t0, n));
    const Tensor y =
        conv.forward(dtype == DType::F32 ? chunk : ops::cast(chunk, dtype), &cache, c.norm ? dev.put(gain) : Tensor());
    ASSERT_EQ(y.shape(), (Shape{n, c.h, c.w, c.cout}));
    ASSERT_EQ(y.device(), device);
    ASSERT_EQ(y.dtype(), conv.out_dtype());
    const std::vector<float> v = y.to_f32_vector();
    got.insert(got.end(), v.begin(), v.end());
    t0 += n;
    if (c.kt > 1) {
      ASSERT_TRUE(cache.tail.defined());
      const int kept = c.pad == ops::CausalPad::Replicate ? c.kt - 1 : std::min(c.kt - 1, t0);
      EXPECT_EQ(cache.tail.dim(0), kept) << "the cache keeps the stream's last kt - 1 frames";
      EXPECT_EQ(cache.tail.dtype(), conv.out_dtype()) << "the cache holds the compute dtype";
    }
  }
  const std::vector<double> in = prologue(x.to_f64_vector(), gain.to_f64_vector(), c.cin, c.norm);
  const std::vector<double> ref = reference(c, in, frames, w.to_f64_vector(), b.to_f64_vector());
  EXPECT_EQ(compare_f64(Tensor::from_f32(got, {static_cast<std::int64_t>(got.size())}), ref, limit), "");
}

const std::vector<ConvCase>& cases() {
  static const std::vector<ConvCase> all = {
      {"3x3x3 chunks 1,2,1,3", 5, 7, 3, 3, false, 4, 6, {1, 2, 1, 3}, false},
      {"3x3x3 with norm prologue", 8, 12, 3, 3, false, 5, 3, {1, 1, 2}, true},
      {"3x3x3 one chunk of 4", 4, 8, 3, 3, false, 3, 5, {4}, true},
      {"time conv 3x1x1", 6, 12, 3, 1, false, 3, 4, {1, 3, 1}, false},
      {"pointwise 1x1x1", 12, 5, 1, 1, false, 4, 4, {2, 1}, false},
      {"2D 3x3 per frame", 3, 8, 1, 3, true, 7, 5, {1, 2}, false},
      // HunyuanVideo-1.5's padding: a first chunk of one frame (its past is itself twice) and of several.
      {"replicate 3x3x3 chunks 1,2,1", 5, 7, 3, 3, false, 4, 6, {1, 2, 1}, false, ops::CausalPad::Replicate},
      {"replicate 3x3x3 norm, chunks 3,1", 8, 12, 3, 3, false, 5, 3, {3, 1}, true, ops::CausalPad::Replicate},
      {"replicate 3x3x3 on 1x1 frames", 4, 4, 3, 3, false, 1, 1, {2, 1}, false, ops::CausalPad::Replicate},
      {"replicate pointwise (no padding)", 12, 5, 1, 1, false, 4, 4, {2, 1}, false, ops::CausalPad::Replicate},
  };
  return all;
}

TEST(CausalConv3d, MatchesFloat64OnCpu) {
  std::uint32_t seed = 1;
  for (const ConvCase& c : cases()) run(c, Device::CPU, ops::ConvMath::FP32, 1e-6, seed++);
}

// FP32: float32 FMA algorithms, only the summation order differs: 1e-5. TF32: both operands rounded to
// 10 mantissa bits, ~2^-11 relative per product, averaging to ~1e-3 relative L2 over these depths.
TEST(CausalConv3d, MatchesFloat64OnCuda) {
  DATTN_SKIP_WITHOUT_CUDA();
  std::uint32_t seed = 1;
  for (const ConvCase& c : cases()) {
    run(c, Device::CUDA, ops::ConvMath::FP32, 1e-5, seed);
    run(c, Device::CUDA, ops::ConvMath::TF32, 5e-3, seed++);
  }
}

// Channel counts in multiples of 8: the bf16 cuDNN path (the cases above mostly take the float32 one).
const std::vector<ConvCase>& bf16_cases() {
  static const std::vector<ConvCase> all = {
      {"bf16 3x3x3 chunks 1,2,1", 8, 16, 3, 3, false, 4, 6, {1, 2, 1}, false},
      {"bf16 3x3x3 norm prologue", 16, 8, 3, 3, false, 5, 3, {1, 1, 2}, true},
      {"bf16 time conv 3x1x1", 16, 32, 3, 1, false, 3, 4, {1, 3, 1}, false},
      {"bf16 pointwise 1x1x1", 24, 16, 1, 1, false, 4, 4, {2, 1}, false},
      {"bf16 2D 3x3 per frame", 8, 8, 1, 3, true, 7, 5, {1, 2}, false},
      {"bf16 3x3x3 to 12 (float32 path)", 16, 12, 3, 3, false, 4, 5, {2, 1}, true},
      {"bf16 replicate 3x3x3 chunks 1,2,1", 8, 16, 3, 3, false, 4, 6, {1, 2, 1}, false, ops::CausalPad::Replicate},
      {"bf16 replicate norm, chunks 3,1", 16, 8, 3, 3, false, 5, 3, {3, 1}, true, ops::CausalPad::Replicate},
      {"bf16 replicate on 1x1 frames", 8, 8, 3, 3, false, 1, 1, {2, 1}, false, ops::CausalPad::Replicate},
      {"bf16 replicate to 3 (float32 path)", 16, 3, 3, 3, false, 4, 4, {1, 2}, true, ops::CausalPad::Replicate},
  };
  return all;
}

// bf16 activations against float64 on the bf16-rounded input: the weights rounded to bf16 (2^-9
// relative at most, 1.1e-3 rms), the norm prologue's output rounded into the bf16 stream (the same
// again), the float32 accumulation (negligible), the output rounded to bf16 and once more after the
// float32 bias is added: four roundings of about 1.1e-3 rms each, ~2.3e-3 relative L2 together; limit
// 1e-2 (an indexing or cache error gives 1e-1 and more). The cases whose channels are not multiples of 8
// compute in float32 (TF32 math): within the TF32 bound.
TEST(CausalConv3d, Bf16MatchesFloat64OnCuda) {
  DATTN_SKIP_WITHOUT_CUDA();
  std::uint32_t seed = 100;
  for (const ConvCase& c : cases()) run(c, Device::CUDA, ops::ConvMath::TF32, 1e-2, seed++, DType::BF16);
  for (const ConvCase& c : bf16_cases()) run(c, Device::CUDA, ops::ConvMath::TF32, 1e-2, seed++, DType::BF16);
}

// bf16 is a CUDA activation dtype: the CPU convolution computes in fp32 only.
TEST(CausalConv3d, Bf16OnCpuIsAClearError) {
  std::mt19937 rng(4);
  try {
    ops::CausalConv3d(random_f32({8, 8, 3, 3, 3}, rng), Tensor(), Device::CPU, ops::ConvMath::FP32,
                      ops::CausalPad::Zeros, DType::BF16);
    FAIL() << "bf16 on the CPU was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA only"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ops::CausalConv3d(random_f32({8, 8, 3, 3, 3}, rng), Tensor(), Device::CPU, ops::ConvMath::FP32,
                                 ops::CausalPad::Zeros, DType::F16),
               UserError);
}

TEST(CausalConv3d, BadArgumentsAreClearErrors) {
  std::mt19937 rng(3);
  EXPECT_THROW(ops::CausalConv3d(random_f32({4, 3, 3, 2, 2}, rng), Tensor(), Device::CPU), UserError);  // even k
  EXPECT_THROW(ops::CausalConv3d(random_f32({4, 3, 3}, rng), Tensor(), Device::CPU), UserError);        // 3-D
  EXPECT_THROW(ops::CausalConv3d(random_f32({4, 3, 1, 3, 3}, rng), random_f32({5}, rng), Device::CPU), UserError);
  const ops::CausalConv3d conv(random_f32({4, 3, 3, 3, 3}, rng), Tensor(), Device::CPU);
  ops::CausalConvCache cache;
  try {
    conv.forward(random_f32({1, 4, 4, 5}, rng), &cache);
    FAIL() << "a 5-channel input was accepted by a 3-channel convolution";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("expected [T, H, W, 3]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(conv.forward(random_f32({1, 4, 4, 3}, rng), nullptr), std::logic_error);  // causal without a cache
  EXPECT_THROW(conv.forward(random_f32({1, 4, 4, 3}, rng), &cache, random_f32({4}, rng)), UserError);  // gain size
}

}  // namespace
}  // namespace dattn
