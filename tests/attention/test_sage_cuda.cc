// SAGE_ATTN on CUDA: accuracy against the float64 reference on the input families of the issue
// (Gaussian, K with large per-channel offsets, Q/K with heavy-tailed outliers, the golden diffusers
// inputs), agreement of the Hopper kernel with the portable kernel and with the CPU implementation (the
// same quantized function, so much closer to each other than to the reference), and key padding.
// Prints the error table. Skips without a CUDA build or device; Hopper-only checks skip elsewhere.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "attention/backends/sage_attn/cpu_sage.h"
#include "attention/backends/sage_attn/cuda_entry.h"
#include "dattn/attention/metrics.h"
#include "dattn/attention/reference.h"
#include "dattn/attention/registry.h"
#include "dattn/core/device.h"
#include "dattn/core/device_memory.h"
#include "support/attention_cases.h"
#include "support/device_case.h"
#include "support/golden_dir.h"

namespace dattn {
namespace {

using test::AttentionCase;
using test::MaskMode;

std::vector<double> reference_of(AttentionCase& c) {
  std::vector<double> ref;
  attention_reference_f64(c.problem(), ref);
  return ref;
}

// Runs SAGE_ATTN on CUDA with `kernel` on a device copy of c; returns the output as doubles.
std::vector<double> run_cuda(AttentionCase& c, sage::SageKernel kernel) {
  test::reset_output(c);
  const test::DeviceProblem dev(c.problem());
  sage::sage_attention_cuda_entry(dev.problem(), kernel);
  device_synchronize();
  EXPECT_EQ(dev.download(c.out.data()), 0u) << "guard bytes overwritten";
  return c.output_f64();
}

std::vector<double> run_cpu(AttentionCase& c) {
  test::reset_output(c);
  sage::sage_attention_cpu(c.problem());
  return c.output_f64();
}

ErrorStats stats_of(const std::vector<double>& got, const std::vector<double>& ref) {
  return compare(got.data(), ref.data(), ref.size());
}

void print_row(const std::string& what, const ErrorStats& e) {
  std::printf("[sage cuda] %-44s rel_l1=%.4f rel_l2=%.4f cos=%.6f nonfinite=%zu\n", what.c_str(), e.rel_l1, e.rel_l2,
              e.cosine, e.nonfinite);
}

// A case with Gaussian q, k, v, then `shape_inputs` applied to the fp32 values before rounding.
using Transform = std::function<void(std::vector<float>& q, std::vector<float>& k, std::vector<float>& v,
                                     std::mt19937_64& rng)>;
AttentionCase make_case(AttentionShape shape, std::uint64_t seed, const Transform& transform) {
  shape.mask = MaskKind::None;
  std::mt19937_64 rng(seed);
  const std::size_t nq = std::size_t(shape.batch * shape.seq_q * shape.heads_q * shape.head_dim);
  const std::size_t nk = std::size_t(shape.batch * shape.seq_k * shape.heads_kv * shape.head_dim);
  std::vector<float> q = test::gaussian(nq, rng), k = test::gaussian(nk, rng), v = test::gaussian(nk, rng);
  if (transform) transform(q, k, v, rng);
  AttentionCase c;
  c.shape = shape;
  c.seed = seed;
  c.q = test::encode_f32(q, shape.dtype);
  c.k = test::encode_f32(k, shape.dtype);
  c.v = test::encode_f32(v, shape.dtype);
  test::reset_output(c);
  return c;
}

// K + a per-channel offset of N(0, 20^2): what real K looks like, and what smoothing (step 1) is for.
void k_channel_offsets(std::vector<float>&, std::vector<float>& k, std::vector<float>&, std::mt19937_64& rng,
                       std::int64_t D) {
  std::normal_distribution<float> g(0.f, 20.f);
  std::vector<float> offset(D);
  for (auto& o : offset) o = g(rng);
  for (std::size_t i = 0; i < k.size(); ++i) k[i] += offset[i % D];
}

// Q and K drawn from Student's t with 3 degrees of freedom (scaled to unit variance): heavy tails,
// maxima of 10-20 standard deviations per 2048-value block, which stretch the INT8 block scales.
// Measured on the H200 over 24 fresh draws (6 runs x 4 configs): rel L1 0.040-0.061, cosine 0.9962-0.9993 (t3 has no finite
// fourth moment, so single draws vary): the INT8 error adds to the FP8 floor and the bar
// (cosine 0.999, rel L1 0.03) is missed. The limits hold the measured spread with margin; the README
// lists this as a case to validate on the model.
void qk_heavy_tails(std::vector<float>& q, std::vector<float>& k, std::vector<float>&, std::mt19937_64& rng) {
  std::student_t_distribution<float> t(3.f);
  const float unit = 1.f / std::sqrt(3.f);  // t(3) has variance 3
  for (auto* x : {&q, &k})
    for (auto& e : *x) e = t(rng) * unit;
}

// 1% of Q and K entries scaled by 25 (isolated spikes in most rows): beyond what per-block INT8 can
// resolve: the spikes set nearly every block's scale, leaving typical entries one or two levels.
// Measured on the H200: cosine 0.983-0.989, rel L1 0.09-0.11 (the CPU scheme is the same). Kept as a
// regression bound and documented in the README as a case where SAGE_ATTN is not safe.
void qk_spikes(std::vector<float>& q, std::vector<float>& k, std::vector<float>&, std::mt19937_64& rng) {
  std::bernoulli_distribution hit(0.01);
  for (auto* x : {&q, &k})
    for (auto& e : *x)
      if (hit(rng)) e *= 25.f;
}

struct Family {
  const char* name;
  Transform transform;
  double max_rel_l1;  // see the comment at kGaussianVFloor
  double min_cosine = 0.999;
};

// With zero-mean iid V (all three families below) the output is itself an average of uncorrelated V
// rows and shrinks at the rate the per-key errors average out, so the relative error stays at the rms
// e4m3 rounding of P and of V combined: 3.5-3.9e-2 (docs/backend-semantics.md). No FP8 P.V kernel can
// go below that on these inputs; the limit is that floor plus margin, and cosine keeps 0.999.
constexpr double kGaussianVFloor = 0.045;

std::vector<Family> families(std::int64_t D) {
  return {
      {"gaussian", nullptr, kGaussianVFloor},
      {"k channel offsets", [D](auto& q, auto& k, auto& v, auto& rng) { k_channel_offsets(q, k, v, rng, D); },
       kGaussianVFloor},
      {"q/k heavy tails (t3)", qk_heavy_tails, 0.08, 0.993},
      {"q/k 1% spikes x25 (unsafe)", qk_spikes, 0.15, 0.975},
  };
}

class SageCudaAccuracy : public ::testing::TestWithParam<std::tuple<int, DType>> {};

TEST_P(SageCudaAccuracy, InputFamiliesAgainstFloat64) {
  DATTN_SKIP_WITHOUT_CUDA();
  const auto [D, dt] = GetParam();
  for (const Family& f : families(D)) {
    // 777 keys and rows: six full 128-tiles and a partial one, 64-key blocks cut mid-way.
    AttentionCase c = make_case({1, 777, 777, 4, 2, D, dt, MaskKind::None}, test::fresh_seed(), f.transform);
    const std::vector<double> ref = reference_of(c);
    const ErrorStats e = stats_of(run_cuda(c, sage::SageKernel::Auto), ref);
    const std::string what =
        std::string(f.name) + " D=" + std::to_string(D) + " " + std::string(dtype_name(dt));
    print_row(what, e);
    EXPECT_EQ(e.nonfinite, 0u) << what;
    EXPECT_GE(e.cosine, f.min_cosine) << what << " seed " << c.seed;
    EXPECT_LE(e.rel_l1, f.max_rel_l1) << what << " seed " << c.seed;
  }
}

INSTANTIATE_TEST_SUITE_P(SageCuda, SageCudaAccuracy,
                         ::testing::Combine(::testing::Values(64, 128), ::testing::Values(DType::BF16, DType::F16)),
                         [](const auto& info) {
                           return "D" + std::to_string(std::get<0>(info.param)) + "_" +
                                  std::string(dtype_name(std::get<1>(info.param)));
                         });

// The golden diffusers attention inputs (wan_tiny self and cross attention): real activations, where
// V is not zero-mean noise, meet the bar of rel L1 <= 0.03.
TEST(SageCuda, GoldenInputsAgainstFloat64) {
  DATTN_SKIP_WITHOUT_CUDA();
  const SafetensorsFile f(dattn::testing::golden_dir() + "/wan_tiny/cases/transformer_t2v_scalar_t.safetensors");
  for (const char* role : {"self", "cross"}) {
    const test::GoldenAttention g = test::load_golden_attention(f, std::string("blocks.0.attn_") + role);
    for (DType dt : {DType::BF16, DType::F16}) {
      AttentionShape shape = g.shape;
      shape.dtype = dt;
      AttentionCase c = test::make_case_from_f64(shape, g.q, g.k, g.v);
      const std::vector<double> ref = reference_of(c);
      const ErrorStats e = stats_of(run_cuda(c, sage::SageKernel::Auto), ref);
      const std::string what = std::string("golden wan_tiny ") + role + " " + std::string(dtype_name(dt));
      print_row(what, e);
      EXPECT_GE(e.cosine, 0.999) << what;
      EXPECT_LE(e.rel_l1, 0.03) << what;
    }
  }
}

// Every key holding the same value per channel: both kernels must return that value (up to output
// rounding), since l is the sum of the weights P.V used (SageAttn.ConstantValuesComeOutExactly on the
// CPU; there, normalising by the unquantized p misses by 5.7e-3 rel L2). On Hopper the tensor core sums
// P8 V8 and P8 alike, so their reduced-precision accumulation must cancel too.
TEST(SageCuda, ConstantValuesComeOutExactly) {
  DATTN_SKIP_WITHOUT_CUDA();
  for (std::int64_t D : {64, 128})
    for (DType dt : {DType::BF16, DType::F16}) {
      const std::int64_t Sq = 200, Sk = 1000, Hq = 4, Hkv = 2;
      AttentionCase c = make_case({1, Sq, Sk, Hq, Hkv, D, dt, MaskKind::None}, test::fresh_seed(),
                                  [&](auto& q, auto&, auto& v, auto&) {
                                    for (auto& e : q) e *= 4.f;  // a few keys dominate each row
                                    for (std::size_t i = 0; i < v.size(); ++i) v[i] = v[i % std::size_t(Hkv * D)];
                                  });
      const std::vector<double> v = test::decode(c.v.data(), dt, std::size_t(Hkv * D));
      std::vector<double> want(std::size_t(Sq * Hq * D));
      for (std::int64_t i = 0; i < Sq; ++i)
        for (std::int64_t h = 0; h < Hq; ++h)
          for (std::int64_t d = 0; d < D; ++d) want[std::size_t((i * Hq + h) * D + d)] = v[std::size_t((h / (Hq / Hkv)) * D + d)];
      for (sage::SageKernel kernel : {sage::SageKernel::Auto, sage::SageKernel::Portable}) {
        const ErrorStats e = stats_of(run_cuda(c, kernel), want);
        const std::string what = std::string(kernel == sage::SageKernel::Auto ? "auto" : "portable") + " D=" +
                                 std::to_string(D) + " " + std::string(dtype_name(dt)) + " seed " + std::to_string(c.seed);
        print_row("constant V " + what, e);
        EXPECT_LE(e.rel_l2, 1e-3) << what;
      }
    }
}

// The Hopper kernel and the portable kernel read the same quantized buffers: they differ only in exp2
// (ex2.approx vs exp2f) and summation order, which can move a p8 by one e4m3 step now and then.
TEST(SageCuda, HopperAgreesWithPortableAndCpu) {
  DATTN_SKIP_WITHOUT_CUDA();
  if (cuda_compute_capability() / 10 != 9) GTEST_SKIP() << "the Hopper kernel needs compute capability 9.x";
  for (std::int64_t D : {64, 128})
    for (DType dt : {DType::BF16, DType::F16})
      for (MaskMode mode : {MaskMode::None, MaskMode::Lengths, MaskMode::EmptyRow}) {
        // GQA (4 query heads on 2 kv heads), batch 2, Sq not a multiple of 64, Sk of 128.
        AttentionCase c = test::make_random_case({2, 300, 1000, 4, 2, D, dt, MaskKind::None}, mode, test::fresh_seed());
        const std::vector<double> ref = reference_of(c);
        const std::vector<double> hopper = run_cuda(c, sage::SageKernel::Hopper);
        const std::string err = test::check_output(c, ref, {0.06, 0.999});
        const std::vector<double> portable = run_cuda(c, sage::SageKernel::Portable);
        const std::vector<double> cpu = run_cpu(c);
        const std::string what = "D=" + std::to_string(D) + " " + std::string(dtype_name(dt)) + " " +
                                 std::string(test::mask_mode_name(mode)) + " seed " + std::to_string(c.seed);
        EXPECT_EQ(err, "") << what;
        const ErrorStats to_ref = stats_of(hopper, ref), to_portable = stats_of(hopper, portable),
                         to_cpu = stats_of(hopper, cpu), portable_cpu = stats_of(portable, cpu);
        print_row("hopper vs ref " + what, to_ref);
        print_row("hopper vs portable " + what, to_portable);
        print_row("portable vs cpu " + what, portable_cpu);
        EXPECT_LE(to_portable.rel_l2, 0.2 * to_ref.rel_l2) << what;
        EXPECT_LE(to_cpu.rel_l2, 0.2 * to_ref.rel_l2) << what;
        EXPECT_LE(portable_cpu.rel_l2, 0.1 * to_ref.rel_l2) << what;
      }
}

// A boolean key mask runs on the portable kernel; it must agree with the float64 reference too.
TEST(SageCuda, KeyMaskAndEmptyRows) {
  DATTN_SKIP_WITHOUT_CUDA();
  for (MaskMode mode : {MaskMode::KeyMask, MaskMode::EmptyRow}) {
    AttentionCase c = test::make_random_case({2, 200, 333, 2, 1, 128, DType::BF16, MaskKind::None}, mode,
                                             test::fresh_seed());
    const std::vector<double> ref = reference_of(c);
    run_cuda(c, sage::SageKernel::Auto);
    EXPECT_EQ(test::check_output(c, ref, {0.06, 0.999}), "") << test::mask_mode_name(mode) << " seed " << c.seed;
  }
}

}  // namespace
}  // namespace dattn
