// gelu_tanh, gelu, silu, add and mul (broadcasting), the interleaved RoPE and the timestep embedding on CUDA
// against float64 references and the CPU ops: every dtype, sizes that are not multiples of 8 (the
// scalar tails), unaligned views, the broadcast shapes the models use, and mixed dtypes.
#include <cmath>

#include <gtest/gtest.h>

#include "dattn/ops/activation.h"
#include "dattn/ops/elementwise.h"
#include "dattn/ops/embedding.h"
#include "dattn/ops/rope.h"
#include "ops/cuda_test_util.h"

namespace dattn::testing {
namespace {

TEST(OpsCudaActivation, GeluTanhAndSilu) {
  DATTN_SKIP_WITHOUT_CUDA();
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  for (const Shape& shape : {Shape{3, 1001}, Shape{4, 64}})  // a scalar tail; all 8-wide
    for (DType dt : kFloatDTypes) {
      SCOPED_TRACE(trace(dt, seed, shape_str(shape)));
      auto x = random_tensor(shape, dt, rng, 0.0f, 3.0f);
      std::vector<double> gelu(x.v.size()), gelu_erf(x.v.size()), silu(x.v.size());
      for (std::size_t i = 0; i < x.v.size(); ++i) {
        const double v = x.v[i];
        gelu[i] = 0.5 * v * (1.0 + std::tanh(0.79788456080286536 /* sqrt(2 / pi) */ * (v + 0.044715 * v * v * v)));
        gelu_erf[i] = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
        silu[i] = v / (1.0 + std::exp(-v));
      }
      poison_device_heap();
      EXPECT_EQ(check_cuda(ops::gelu_tanh(dev(x.t)), ops::gelu_tanh(x.t), gelu), "");
      EXPECT_EQ(check_cuda(ops::gelu(dev(x.t)), ops::gelu(x.t), gelu_erf), "");
      EXPECT_EQ(check_cuda(ops::silu(dev(x.t)), ops::silu(x.t), silu), "");
      EXPECT_EQ(check_cuda(ops::gelu(dev_misaligned(x.t)), ops::gelu(x.t), gelu_erf), "");
      EXPECT_EQ(check_cuda(ops::gelu_tanh(dev_misaligned(x.t)), ops::gelu_tanh(x.t), gelu), "");
    }
  // Large arguments saturate without Inf/NaN: gelu(x) -> x for x >> 0 and -> -0 for x << 0.
  const Tensor big = Tensor::from_f32({-100.0f, -20.0f, 20.0f, 100.0f}, {4});
  EXPECT_EQ(check_cuda(ops::gelu_tanh(dev(big)), ops::gelu_tanh(big), {0.0, 0.0, 20.0, 100.0}), "");
  EXPECT_EQ(check_cuda(ops::gelu(dev(big)), ops::gelu(big), {0.0, 0.0, 20.0, 100.0}), "");
}

struct BroadcastCase {
  Shape a, b;
  DType da, db;
  std::optional<DType> out;
};

TEST(OpsCudaElementwise, AddAndMulBroadcast) {
  DATTN_SKIP_WITHOUT_CUDA();
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  const DType f = DType::F32, h = DType::BF16, g = DType::F16;
  const BroadcastCase cases[] = {
      {{3, 5, 17}, {3, 5, 17}, f, f, {}},        // same shape, odd
      {{4, 6, 64}, {4, 6, 64}, h, h, {}},        // same shape, 8-wide (the residual add)
      {{2, 6, 64}, {1, 6, 64}, h, f, f},         // timestep_proj + scale_shift_table -> float32
      {{1, 2, 24}, {3, 1, 24}, f, h, f},         // both broadcast (the output modulation)
      {{7, 9}, {9}, g, g, {}},                   // a row vector
      {{7, 9}, {7, 1}, h, h, {}},                // a column vector (innermost stride 0)
      {{5, 16}, {5, 1}, f, f, h},                // column vector on the 8-wide path, bf16 out
      {{1}, {2, 3, 4, 5, 3}, f, f, {}},          // a scalar a against a 5-D b
      {{2, 1, 3, 1, 5, 1}, {1, 4, 1, 6, 1, 7}, f, g, f},  // six alternating broadcast dimensions
  };
  for (const auto& c : cases)
    for (bool is_add : {true, false}) {
      SCOPED_TRACE(std::string(is_add ? "add " : "mul ") + shape_str(c.a) + " " + std::string(dtype_name(c.da)) + " with " +
                   shape_str(c.b) + " " + std::string(dtype_name(c.db)) + " seed " + std::to_string(seed));
      auto a = random_tensor(c.a, c.da, rng);
      auto b = random_tensor(c.b, c.db, rng);
      const Shape out = *ops::broadcast_shape(c.a, c.b);
      // float64 reference through the broadcast index map.
      std::vector<double> ref(static_cast<std::size_t>(shape_numel(out)));
      for (std::int64_t i = 0; i < shape_numel(out); ++i) {
        std::int64_t rest = i, ia = 0, ib = 0, sa = 1, sb = 1;
        for (int d = static_cast<int>(out.size()) - 1; d >= 0; --d) {
          const std::int64_t idx = rest % out[d];
          rest /= out[d];
          const int da = d - static_cast<int>(out.size() - c.a.size()), db = d - static_cast<int>(out.size() - c.b.size());
          if (da >= 0) ia += (c.a[da] == 1 ? 0 : idx) * sa, sa *= c.a[da];
          if (db >= 0) ib += (c.b[db] == 1 ? 0 : idx) * sb, sb *= c.b[db];
        }
        ref[i] = is_add ? a.v[ia] + b.v[ib] : a.v[ia] * b.v[ib];
      }
      poison_device_heap();
      const Tensor gpu = is_add ? ops::add(dev(a.t), dev(b.t), c.out) : ops::mul(dev(a.t), dev(b.t), c.out);
      const Tensor cpu = is_add ? ops::add(a.t, b.t, c.out) : ops::mul(a.t, b.t, c.out);
      EXPECT_EQ(check_cuda(gpu, cpu, ref), "");
    }
}

TEST(OpsCudaElementwise, MixedDevicesAreAUserError) {
  DATTN_SKIP_WITHOUT_CUDA();
  const Tensor a = Tensor::zeros({2, 8}, DType::F32);
  EXPECT_NE(user_error([&] { ops::add(dev(a), a); }).find("expected it on cuda"), std::string::npos);
  EXPECT_NE(user_error([&] { ops::mul(a, dev(a)); }).find("expected it on cpu"), std::string::npos);
}

TEST(OpsCudaRope, InterleavedPairsEveryPath) {
  DATTN_SKIP_WITHOUT_CUDA();
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  for (std::int64_t d : {std::int64_t{6}, std::int64_t{128}})  // pairs only; 8-wide
    for (DType dt : kFloatDTypes) {
      SCOPED_TRACE(trace(dt, seed, "D " + std::to_string(d)));
      const std::int64_t B = 2, S = 7, H = 3;
      auto x = random_tensor({B, S, H, d}, dt, rng);
      // Tables whose pairs differ, so reading cos at even and sin at odd columns is checked.
      auto cos = random_tensor({S, d}, DType::F32, rng);
      auto sin = random_tensor({S, d}, DType::F32, rng);
      std::vector<double> ref(x.v.size());
      for (std::int64_t i = 0; i < B * S * H * d; i += 2) {
        const std::int64_t s = i / (H * d) % S, col = i % d;
        const double c = cos.v[s * d + col], sn = sin.v[s * d + col + 1], x1 = x.v[i], x2 = x.v[i + 1];
        ref[i] = x1 * c - x2 * sn;
        ref[i + 1] = x1 * sn + x2 * c;
      }
      poison_device_heap();
      EXPECT_EQ(check_cuda(ops::apply_rope_interleaved(dev(x.t), dev(cos.t), dev(sin.t)),
                           ops::apply_rope_interleaved(x.t, cos.t, sin.t), ref),
                "");
      EXPECT_EQ(check_cuda(ops::apply_rope_interleaved(dev_misaligned(x.t), dev(cos.t), dev(sin.t)),
                           ops::apply_rope_interleaved(x.t, cos.t, sin.t), ref),
                "");
    }
}

// Rotate-half RoPE on CUDA against the float64 form, tables whose halves differ.
TEST(OpsCudaRope, RotateHalfMatchesFloat64) {
  DATTN_SKIP_WITHOUT_CUDA();
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  for (std::int64_t d : {std::int64_t{12}, std::int64_t{128}})
    for (DType dt : kFloatDTypes) {
      SCOPED_TRACE(trace(dt, seed, "D " + std::to_string(d)));
      const std::int64_t B = 2, S = 7, H = 3, half = d / 2;
      auto x = random_tensor({B, S, H, d}, dt, rng);
      auto cos = random_tensor({S, d}, DType::F32, rng);
      auto sin = random_tensor({S, d}, DType::F32, rng);
      std::vector<double> ref(x.v.size());
      for (std::int64_t i = 0; i < B * S * H * d; ++i) {
        const std::int64_t s = i / (H * d) % S, col = i % d;
        const double rot = col < half ? -x.v[i + half] : x.v[i - half];
        ref[i] = x.v[i] * cos.v[s * d + col] + rot * sin.v[s * d + col];
      }
      poison_device_heap();
      EXPECT_EQ(check_cuda(ops::apply_rope_rotate_half(dev(x.t), dev(cos.t), dev(sin.t)),
                           ops::apply_rope_rotate_half(x.t, cos.t, sin.t), ref),
                "");
    }
}

TEST(OpsCudaEmbedding, TimestepEmbeddingMatchesTheCpuBits) {
  DATTN_SKIP_WITHOUT_CUDA();
  // Diffusion timesteps up to 999 (700 rad arguments), an odd width (zero last column), both orders.
  const std::vector<double> ts = {0.0, 1.0, 17.5, 499.25, 700.0, 999.0};
  for (DType tdt : {DType::F64, DType::F32, DType::BF16})
    for (int dim : {256, 33})
      for (bool flip : {true, false}) {
        SCOPED_TRACE(std::string(dtype_name(tdt)) + " dim " + std::to_string(dim) + (flip ? " cos,sin" : " sin,cos"));
        ops::TimestepEmbeddingParams p;
        p.dim = dim;
        p.flip_sin_to_cos = flip;
        p.downscale_freq_shift = flip ? 0.0f : 1.0f;
        const Tensor t = Tensor::from_f64(ts, {static_cast<std::int64_t>(ts.size())}, tdt);
        poison_device_heap();
        const Tensor gpu = ops::timestep_embedding(dev(t), p);
        const Tensor cpu = ops::timestep_embedding(t, p);
        EXPECT_EQ(check_cuda(gpu, cpu, cpu.to_f64_vector()), "");
        // The same float32 steps on both devices: at most a handful of last-bit differences.
        const auto g = gpu.to_f32_vector(), c = cpu.to_f32_vector();
        int differ = 0;
        for (std::size_t i = 0; i < g.size(); ++i) differ += g[i] != c[i];
        EXPECT_LE(differ, static_cast<int>(g.size() / 100)) << differ << " of " << g.size() << " elements differ";
      }
}

}  // namespace
}  // namespace dattn::testing
