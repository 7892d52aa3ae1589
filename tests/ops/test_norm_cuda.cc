// layer_norm, rms_norm, rms_norm_rope_interleaved, layer_norm_modulated, gated_residual and the two fused
// (residual_layer_norm_modulated, residual_layer_norm) on CUDA
// against float64 references and the CPU ops: every dtype, row lengths that take each kernel path (odd
// D: a block per row, scalar; D % 8 == 0 up to 4096: lane groups of every width, several rows per warp,
// partly filled blocks; 5120: a block per row, 8-wide; D > 12288: rows too long for shared memory), rows
// with a large mean, float32 parameters on 16-bit activations, unaligned views, and token-row tables
// short (runs) and long (an uploaded table).
#include <cmath>

#include <gtest/gtest.h>

#include "dattn/ops/elementwise.h"
#include "dattn/ops/modulation.h"
#include "dattn/ops/norm.h"
#include "ops/cuda_test_util.h"
#include "ops/norm_rope_ref.h"

namespace dattn::testing {
namespace {

std::vector<double> norm_ref(const std::vector<double>& x, std::int64_t d, double eps, bool rms, const double* w,
                             const double* b) {
  std::vector<double> y(x.size());
  for (std::size_t r = 0; r < x.size() / d; ++r) {
    const double* in = x.data() + r * d;
    double mean = 0, var = 0;
    if (!rms)
      for (std::int64_t i = 0; i < d; ++i) mean += in[i] / d;
    for (std::int64_t i = 0; i < d; ++i) var += (in[i] - mean) * (in[i] - mean) / d;
    for (std::int64_t i = 0; i < d; ++i) {
      double n = (in[i] - mean) / std::sqrt(var + eps);
      if (w) n *= w[i];
      if (b) n += b[i];
      y[r * d + i] = n;
    }
  }
  return y;
}

// Block kernel, scalar; lane groups of 1, 16 and 32 lanes with 1, 4, 8, 12 and 16 vectors (1000: the
// last vector of a lane empty; 512 and 1536: 2 and 6 vectors); block kernel, 8-wide; 8-wide beyond shared
// memory.
const std::int64_t kWidths[] = {75, 8, 128, 512, 1000, 1536, 2048, 3072, 4096, 5120, 20008};
constexpr std::int64_t kRows = 37;  // not a multiple of the rows per block of any lane group

TEST(OpsCudaNorm, LayerNormEveryPath) {
  DATTN_SKIP_WITHOUT_CUDA();
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  for (std::int64_t d : kWidths)
    for (DType dt : kFloatDTypes)
      for (DType pdt : {dt, DType::F32}) {  // parameters in x's dtype, or float32 (diffusers' norm2)
        SCOPED_TRACE(trace(dt, seed, "D " + std::to_string(d) + " params " + std::string(dtype_name(pdt))));
        auto x = random_tensor({kRows, d}, dt, rng, 4.0f, 2.0f);  // a large mean
        auto w = random_tensor({d}, pdt, rng, 1.0f, 0.1f);
        auto b = random_tensor({d}, pdt, rng, 0.0f, 0.1f);
        poison_device_heap();
        EXPECT_EQ(check_cuda(ops::layer_norm(dev(x.t), 1e-6f), ops::layer_norm(x.t, 1e-6f),
                             norm_ref(x.v, d, 1e-6, false, nullptr, nullptr)),
                  "");
        EXPECT_EQ(check_cuda(ops::layer_norm(dev(x.t), 1e-5f, dev(w.t), dev(b.t)), ops::layer_norm(x.t, 1e-5f, w.t, b.t),
                             norm_ref(x.v, d, 1e-5, false, w.v.data(), b.v.data())),
                  "");
      }
}

TEST(OpsCudaNorm, RmsNormEveryPath) {
  DATTN_SKIP_WITHOUT_CUDA();
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  for (std::int64_t d : kWidths)
    for (DType dt : kFloatDTypes) {
      SCOPED_TRACE(trace(dt, seed, "D " + std::to_string(d)));
      auto x = random_tensor({1, kRows, d}, dt, rng, 0.5f, 3.0f);
      auto w = random_tensor({d}, dt, rng, 1.0f, 0.1f);
      poison_device_heap();
      EXPECT_EQ(check_cuda(ops::rms_norm(dev(x.t), 1e-6f), ops::rms_norm(x.t, 1e-6f),
                           norm_ref(x.v, d, 1e-6, true, nullptr, nullptr)),
                "");
      EXPECT_EQ(check_cuda(ops::rms_norm(dev(x.t), 1e-6f, dev(w.t)), ops::rms_norm(x.t, 1e-6f, w.t),
                           norm_ref(x.v, d, 1e-6, true, w.v.data(), nullptr)),
                "");
    }
}

TEST(OpsCudaNorm, UnalignedViewsTakeTheScalarPath) {
  DATTN_SKIP_WITHOUT_CUDA();
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  for (DType dt : kFloatDTypes) {
    SCOPED_TRACE(trace(dt, seed));
    auto x = random_tensor({5, 64}, dt, rng, 1.0f, 2.0f);
    auto w = random_tensor({64}, dt, rng, 1.0f, 0.1f);
    EXPECT_EQ(check_cuda(ops::rms_norm(dev_misaligned(x.t), 1e-6f, dev_misaligned(w.t)), ops::rms_norm(x.t, 1e-6f, w.t),
                         norm_ref(x.v, 64, 1e-6, true, w.v.data(), nullptr)),
              "");
    EXPECT_EQ(check_cuda(ops::layer_norm(dev_misaligned(x.t), 1e-6f), ops::layer_norm(x.t, 1e-6f),
                         norm_ref(x.v, 64, 1e-6, false, nullptr, nullptr)),
              "");
  }
}

// The fused norm and rotation: HunyuanVideo-1.5's per-head form (group kernel, 16 rows of 128 per block),
// Wan's across heads (3072 = 24 heads of 128, 12 vectors per lane), 5120 (a block per row, 8-wide), a
// rotary width that is not a multiple of 8 (scalar), and unaligned views (scalar).
TEST(OpsCudaNorm, RmsNormRopeEveryPath) {
  DATTN_SKIP_WITHOUT_CUDA();
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  struct Form {
    std::int64_t g, n, dr;
    bool misaligned;
  };
  for (const Form f : {Form{16, 128, 128, false}, Form{1, 3072, 128, false}, Form{1, 5120, 128, false},
                       Form{3, 36, 12, false}, Form{2, 64, 64, true}})
    for (DType dt : kFloatDTypes) {
      SCOPED_TRACE(trace(dt, seed, "G " + std::to_string(f.g) + " N " + std::to_string(f.n)));
      const std::int64_t s = 9;
      auto x = random_tensor({2, s, f.g, f.n}, dt, rng, 0.5f, 3.0f);
      auto w = random_tensor({f.n}, dt, rng, 1.0f, 0.1f);
      auto c = random_tensor({s, f.dr}, DType::F32, rng);
      auto sn = random_tensor({s, f.dr}, DType::F32, rng);
      const auto to_dev = [&](const Tensor& t) { return f.misaligned ? dev_misaligned(t) : dev(t); };
      poison_device_heap();
      EXPECT_EQ(check_cuda(ops::rms_norm_rope_interleaved(to_dev(x.t), 1e-6f, to_dev(w.t), to_dev(c.t), to_dev(sn.t)),
                           ops::rms_norm_rope_interleaved(x.t, 1e-6f, w.t, c.t, sn.t),
                           norm_rope_ref(x.v, s, f.g, f.n, 1e-6, w.v.data(), c.v, sn.v, f.dr)),
                "");
    }
}

// Rows of params per token: a few runs (kernel arguments), or 40 alternating runs (an uploaded table).
std::vector<std::int32_t> token_rows(std::int64_t tokens, std::int32_t rows, bool many_runs) {
  std::vector<std::int32_t> r(tokens);
  for (std::int64_t t = 0; t < tokens; ++t)
    r[t] = many_runs ? static_cast<std::int32_t>(t % rows) : static_cast<std::int32_t>(t * rows / tokens);
  return r;
}

TEST(OpsCudaModulation, LayerNormModulatedAndGatedResidual) {
  DATTN_SKIP_WITHOUT_CUDA();
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  const std::int64_t tokens = 40, k = 6;
  const std::int32_t rows = 3;
  for (std::int64_t d : {std::int64_t{77}, std::int64_t{256}, std::int64_t{3072}})
    for (bool many_runs : {false, true})
      for (DType dt : kFloatDTypes) {
        SCOPED_TRACE(trace(dt, seed, "D " + std::to_string(d) + (many_runs ? " table" : " runs")));
        auto x = random_tensor({2, tokens / 2, d}, dt, rng, 2.0f, 1.5f);
        auto h = random_tensor({2, tokens / 2, d}, dt, rng);
        auto params = random_tensor({rows, k, d}, DType::F32, rng, 0.0f, 0.5f);
        const auto row_of = token_rows(tokens, rows, many_runs);
        const ops::TokenModulation cpu_m{params.t, row_of}, gpu_m{dev(params.t), row_of};
        const int shift_k = 3, scale_k = 4, gate_k = 5;

        std::vector<double> ln = norm_ref(x.v, d, 1e-6, false, nullptr, nullptr), gr(x.v.size());
        for (std::int64_t t = 0; t < tokens; ++t)
          for (std::int64_t i = 0; i < d; ++i) {
            const double* p = params.v.data() + row_of[t] * k * d;
            double& v = ln[t * d + i];
            v = v * (1.0 + p[scale_k * d + i]) + p[shift_k * d + i];
            gr[t * d + i] = h.v[t * d + i] + x.v[t * d + i] * p[gate_k * d + i];
          }
        poison_device_heap();
        EXPECT_EQ(check_cuda(ops::layer_norm_modulated(dev(x.t), 1e-6f, gpu_m, shift_k, scale_k),
                             ops::layer_norm_modulated(x.t, 1e-6f, cpu_m, shift_k, scale_k), ln),
                  "");
        EXPECT_EQ(check_cuda(ops::gated_residual(dev(h.t), dev(x.t), gpu_m, gate_k),
                             ops::gated_residual(h.t, x.t, cpu_m, gate_k), gr),
                  "");
        // Unaligned views take the scalar path of gated_residual.
        EXPECT_EQ(check_cuda(ops::gated_residual(dev_misaligned(h.t), dev_misaligned(x.t), gpu_m, gate_k),
                             ops::gated_residual(h.t, x.t, cpu_m, gate_k), gr),
                  "");
      }
}

// The fused residual + norm against float64 and the CPU op, and bit for bit against the two CUDA ops (it
// rounds the residual as gated_residual does and normalises the rounded row with the same kernel
// arithmetic): gated (its own modulation, not the norm's) and plain; widths of the fused kernel (256 to
// 4096) and of the two-op fallback (77, 5120); unaligned views (the fallback).
TEST(OpsCudaModulation, ResidualLayerNormModulatedIsTheTwoOps) {
  DATTN_SKIP_WITHOUT_CUDA();
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  const std::int64_t tokens = 40, k = 6;
  const std::int32_t rows = 3;
  for (std::int64_t d : {77, 256, 2048, 3072, 4096, 5120})
    for (bool gated : {true, false})
      for (DType dt : kFloatDTypes) {
        SCOPED_TRACE(trace(dt, seed, "D " + std::to_string(d) + (gated ? " gated" : " plain")));
        auto h = random_tensor({2, tokens / 2, d}, dt, rng, 2.0f, 1.5f);
        auto x = random_tensor({2, tokens / 2, d}, dt, rng);
        auto norm_params = random_tensor({rows, k, d}, DType::F32, rng, 0.0f, 0.5f);
        auto gate_params = random_tensor({1, 2, d}, DType::F32, rng, 0.0f, 0.5f);
        const auto row_of = token_rows(tokens, rows, d == 256);  // an uploaded table once
        const ops::TokenModulation cpu_n{norm_params.t, row_of}, gpu_n{dev(norm_params.t), row_of};
        const std::vector<std::int32_t> one_row(tokens, 0);
        const ops::TokenModulation cpu_g{gate_params.t, one_row}, gpu_g{dev(gate_params.t), one_row};
        const int shift_k = 3, scale_k = 4, gate_k = 1;

        std::vector<double> resid(h.v.size());
        for (std::size_t i = 0; i < h.v.size(); ++i)
          resid[i] = h.v[i] + x.v[i] * (gated ? gate_params.v[gate_k * d + static_cast<std::int64_t>(i) % d] : 1.0);
        std::vector<double> normed = norm_ref(resid, d, 1e-6, false, nullptr, nullptr);
        for (std::int64_t t = 0; t < tokens; ++t)
          for (std::int64_t i = 0; i < d; ++i) {
            const double* p = norm_params.v.data() + row_of[t] * k * d;
            double& v = normed[t * d + i];
            v = v * (1.0 + p[scale_k * d + i]) + p[shift_k * d + i];
          }
        for (bool misaligned : {false, true}) {
          SCOPED_TRACE(misaligned ? "misaligned" : "aligned");
          const Tensor hd = misaligned ? dev_misaligned(h.t) : dev(h.t), xd = misaligned ? dev_misaligned(x.t) : dev(x.t);
          poison_device_heap();
          const auto fused = ops::residual_layer_norm_modulated(hd, xd, gated ? &gpu_g : nullptr, gate_k, 1e-6f, gpu_n,
                                                                shift_k, scale_k);
          const auto cpu = ops::residual_layer_norm_modulated(h.t, x.t, gated ? &cpu_g : nullptr, gate_k, 1e-6f, cpu_n,
                                                              shift_k, scale_k);
          EXPECT_EQ(check_cuda(fused.residual, cpu.residual, resid), "");
          EXPECT_EQ(check_cuda(fused.normed, cpu.normed, normed), "");
          const Tensor two_resid = gated ? ops::gated_residual(hd, xd, gpu_g, gate_k) : ops::add(hd, xd);
          const Tensor two_normed = ops::layer_norm_modulated(two_resid, 1e-6f, gpu_n, shift_k, scale_k);
          EXPECT_EQ(fused.residual.to_f64_vector(), two_resid.to_f64_vector());
          EXPECT_EQ(fused.normed.to_f64_vector(), two_normed.to_f64_vector());
        }
      }
}

// The gated residual + affine layer norm (Wan's norm2) against float64 and the CPU op, and bit for bit
// against the two CUDA ops: gated and plain, with and without weight and bias, widths of the group kernel
// (256), the block kernel (3072, Wan's width) and the two-op fallback (77, 5120), unaligned views.
TEST(OpsCudaModulation, ResidualLayerNormIsTheTwoOps) {
  DATTN_SKIP_WITHOUT_CUDA();
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  const std::int64_t tokens = 40;
  for (std::int64_t d : {77, 256, 3072, 5120})
    for (bool gated : {true, false})
      for (bool affine : {true, false})
        for (DType dt : kFloatDTypes) {
          SCOPED_TRACE(trace(dt, seed, "D " + std::to_string(d) + (gated ? " gated" : " plain") +
                                           (affine ? " affine" : " no affine")));
          auto h = random_tensor({2, tokens / 2, d}, dt, rng, 2.0f, 1.5f);
          auto x = random_tensor({2, tokens / 2, d}, dt, rng);
          auto gate_params = random_tensor({2, 3, d}, DType::F32, rng, 0.0f, 0.5f);
          auto w = random_tensor({d}, dt, rng, 1.0f, 0.2f);
          auto b = random_tensor({d}, dt, rng, 0.0f, 0.3f);
          const auto row_of = token_rows(tokens, 2, d == 3072);
          const ops::TokenModulation cpu_g{gate_params.t, row_of}, gpu_g{dev(gate_params.t), row_of};
          const int gate_k = 2;
          const Tensor cw = affine ? w.t : Tensor(), cb = affine ? b.t : Tensor();
          const Tensor gw = affine ? dev(w.t) : Tensor(), gb = affine ? dev(b.t) : Tensor();

          std::vector<double> resid(h.v.size());
          for (std::int64_t t = 0; t < tokens; ++t)
            for (std::int64_t i = 0; i < d; ++i)
              resid[t * d + i] = h.v[t * d + i] + x.v[t * d + i] * (gated ? gate_params.v[(row_of[t] * 3 + gate_k) * d + i] : 1.0);
          const std::vector<double> normed =
              norm_ref(resid, d, 1e-6, false, affine ? w.v.data() : nullptr, affine ? b.v.data() : nullptr);
          for (bool misaligned : {false, true}) {
            SCOPED_TRACE(misaligned ? "misaligned" : "aligned");
            const Tensor hd = misaligned ? dev_misaligned(h.t) : dev(h.t), xd = misaligned ? dev_misaligned(x.t) : dev(x.t);
            poison_device_heap();
            const auto fused = ops::residual_layer_norm(hd, xd, gated ? &gpu_g : nullptr, gate_k, 1e-6f, gw, gb);
            const auto cpu = ops::residual_layer_norm(h.t, x.t, gated ? &cpu_g : nullptr, gate_k, 1e-6f, cw, cb);
            EXPECT_EQ(check_cuda(fused.residual, cpu.residual, resid), "");
            EXPECT_EQ(check_cuda(fused.normed, cpu.normed, normed), "");
            const Tensor two_resid = gated ? ops::gated_residual(hd, xd, gpu_g, gate_k) : ops::add(hd, xd);
            EXPECT_EQ(fused.residual.to_f64_vector(), two_resid.to_f64_vector());
            EXPECT_EQ(fused.normed.to_f64_vector(), ops::layer_norm(two_resid, 1e-6f, gw, gb).to_f64_vector());
          }
        }
}

// Thousands of rows whose parameter rows change at arbitrary tokens (runs of 1201, 3, 1299 and 2500 tokens): a
// kernel that reuses one row's shift, scale or gate for the rows after it (as any staging or caching of the
// parameter rows across rows would, the R-rows block kernel among them) must follow every change. D = 512
// takes the group kernel, 3072 the block kernels (rows of 1 or R a block; 5003 rows leave a partial last block).
TEST(OpsCudaModulation, EveryTokenUsesItsOwnParameterRow) {
  DATTN_SKIP_WITHOUT_CUDA();
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  const std::int64_t tokens = 5003, k = 6;
  std::vector<std::int32_t> row_of(tokens);
  for (std::int64_t t = 0; t < tokens; ++t) row_of[t] = t < 1201 ? 0 : (t < 1204 ? 2 : (t < 2503 ? 1 : 0));
  for (std::int64_t d : {std::int64_t{512}, std::int64_t{3072}})
    for (DType dt : {DType::BF16, DType::F32}) {
      SCOPED_TRACE(trace(dt, seed, "D " + std::to_string(d) + ", 5003 tokens"));
      auto x = random_tensor({1, tokens, d}, dt, rng, 2.0f, 1.5f);
      auto h = random_tensor({1, tokens, d}, dt, rng);
      auto params = random_tensor({3, k, d}, DType::F32, rng, 0.0f, 0.5f);
      const ops::TokenModulation cpu_m{params.t, row_of}, gpu_m{dev(params.t), row_of};
      const int shift_k = 0, scale_k = 1, gate_k = 2;
      std::vector<double> resid(x.v.size());
      for (std::int64_t t = 0; t < tokens; ++t)
        for (std::int64_t i = 0; i < d; ++i)
          resid[t * d + i] = h.v[t * d + i] + x.v[t * d + i] * params.v[(row_of[t] * k + gate_k) * d + i];
      const auto modulate = [&](std::vector<double> n) {
        for (std::int64_t t = 0; t < tokens; ++t)
          for (std::int64_t i = 0; i < d; ++i) {
            const double* p = params.v.data() + row_of[t] * k * d;
            n[t * d + i] = n[t * d + i] * (1.0 + p[scale_k * d + i]) + p[shift_k * d + i];
          }
        return n;
      };
      poison_device_heap();
      EXPECT_EQ(check_cuda(ops::layer_norm_modulated(dev(x.t), 1e-6f, gpu_m, shift_k, scale_k),
                           ops::layer_norm_modulated(x.t, 1e-6f, cpu_m, shift_k, scale_k),
                           modulate(norm_ref(x.v, d, 1e-6, false, nullptr, nullptr))),
                "");
      EXPECT_EQ(check_cuda(ops::gated_residual(dev(h.t), dev(x.t), gpu_m, gate_k), ops::gated_residual(h.t, x.t, cpu_m, gate_k),
                           resid),
                "");
      const auto fused = ops::residual_layer_norm_modulated(dev(h.t), dev(x.t), &gpu_m, gate_k, 1e-6f, gpu_m, shift_k, scale_k);
      const auto cpu = ops::residual_layer_norm_modulated(h.t, x.t, &cpu_m, gate_k, 1e-6f, cpu_m, shift_k, scale_k);
      EXPECT_EQ(check_cuda(fused.residual, cpu.residual, resid), "");
      EXPECT_EQ(check_cuda(fused.normed, cpu.normed, modulate(norm_ref(resid, d, 1e-6, false, nullptr, nullptr))), "");
    }
}

TEST(OpsCudaModulation, ParamsOnAnotherDeviceAreAUserError) {
  DATTN_SKIP_WITHOUT_CUDA();
  const Tensor x = Tensor::zeros({4, 8}, DType::F32);
  const ops::TokenModulation m{Tensor::zeros({1, 6, 8}, DType::F32), std::vector<std::int32_t>(4, 0)};
  EXPECT_NE(user_error([&] { ops::layer_norm_modulated(dev(x), 1e-6f, m, 0, 1); }).find("params"), std::string::npos);
  EXPECT_NE(user_error([&] { ops::gated_residual(dev(x), x, {dev(m.params), m.row_of_token}, 2); }).find("expected it on cuda"),
            std::string::npos);
}

}  // namespace
}  // namespace dattn::testing
