// The backend matrix on Device::CUDA: every registered backend whose support predicate accepts a
// case runs it from device memory, against the float64 reference computed on the host, with the
// output in a device buffer between guard regions and NaN-poisoned. Same checks as the CPU matrix
// (test_backend_matrix.cc): guards, NaN/Inf first, fully masked rows exactly zero, then errors.
// Plus the golden diffusers cases on CUDA and TORCH_SDPA's own CUDA tests (large Sk, general masks,
// unusual head dims). Everything skips, with the reason, without a CUDA build or a visible GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "dattn/attention/backend.h"
#include "dattn/attention/reference.h"
#include "dattn/attention/registry.h"
#include "dattn/core/device.h"
#include "support/attention_cases.h"
#include "support/backend_matrix.h"
#include "support/device_case.h"
#include "support/nonfinite_cases.h"

namespace dattn {
namespace {

using nlohmann::json;
using test::AttentionCase;
using test::exact_limits;
using test::is;
using test::kMatrixDTypes;
using test::MaskMode;
using test::reference;
constexpr Device kCuda = Device::CUDA;

// Runs, checks and tallies on CUDA (support/backend_matrix.h). The limits (support/matrix_limits.h) are
// the CPU matrix's, but for FLASH_ATTN bf16: 3e-3 on CUDA.
test::MatrixHarness& matrix() {
  static test::MatrixHarness h(kCuda);
  return h;
}
// The summary table after all tests (when any ran), backends by name.
[[maybe_unused]] ::testing::Environment* const kSummary =
    ::testing::AddGlobalTestEnvironment(test::summary_environment(matrix()));

// ---- the matrix -----------------------------------------------------------------------------------
// The CPU matrix's shapes plus one larger: 1000 is no multiple of any tile (16, 32, 64, 128).
std::vector<test::MatrixShape> cuda_shapes() {
  std::vector<test::MatrixShape> shapes(std::begin(test::kMatrixShapes), std::end(test::kMatrixShapes));
  shapes.push_back({"large1000", 1, 1000, 1000, 2, 2});
  return shapes;
}

// Whether a backend runs at all on the device is asked for one full-size video self-attention in bf16
// (24 heads x 128 over 11440 tokens, Wan2.2-5B's at 704x1280x49).
AttentionShape availability_shape() {
  AttentionShape s;
  s.seq_q = s.seq_k = 11440;
  s.heads_q = s.heads_kv = 24;
  s.head_dim = 128;
  s.dtype = DType::BF16;
  return s;
}

class BackendMatrixCuda : public ::testing::TestWithParam<std::string> {};

TEST_P(BackendMatrixCuda, RandomCasesAgainstFloat64Reference) {
  DATTN_SKIP_WITHOUT_CUDA();
  const AttentionBackend& be = backend_by_name(GetParam());
  if (const Support avail = backend_availability(be, kCuda, availability_shape()); !avail.ok) {
    matrix().report()[be.name()].reasons.insert("not available: " + avail.reason);
    GTEST_SKIP() << be.name() << " is not available on cuda: " << avail.reason;
  }
  std::vector<std::int64_t> head_dims(std::begin(test::kMatrixHeadDims), std::end(test::kMatrixHeadDims));
  if (is(be, "TORCH_SDPA")) head_dims.push_back(256);
  const auto start = std::chrono::steady_clock::now();
  // SPARSE_BLOCK runs at density 1 here (exact); its kept-block checks live in the CPU matrix.
  const int supported = test::for_each_matrix_case(
      matrix(), be, cuda_shapes(), head_dims, [&](AttentionCase& c, const std::string& what) {
        matrix().run_checked(be, c, test::dense_extra(be), reference(c), matrix().limits_for(be, c.shape.dtype),
                             what);
      });
  EXPECT_GT(supported, 0) << be.name() << " is available on cuda but supports none of the matrix's cases";
  std::printf("[matrix cuda] %s: %d supported combinations in %.2f s\n", std::string(be.name()).c_str(), supported,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

// NaN and Inf reach the output exactly where the float64 reference has them (support/nonfinite_cases.h),
// SPARSE_BLOCK at density 1 as in the matrix above.
TEST_P(BackendMatrixCuda, NonFiniteInputsPropagateAsTheReference) {
  DATTN_SKIP_WITHOUT_CUDA();
  const AttentionBackend& be = backend_by_name(GetParam());
  if (const Support avail = backend_availability(be, kCuda, availability_shape()); !avail.ok)
    GTEST_SKIP() << be.name() << " is not available on cuda: " << avail.reason;
  const int ran = test::run_nonfinite_cases(matrix(), be, test::dense_extra(be), reference, "");
  EXPECT_GT(ran, 0) << be.name() << " is available on cuda but ran none of the non-finite cases";
}

// Causal (with and without key padding) on the square shapes plus 1000 (several Hopper 128-row tiles
// and a partial one): FLASH_ATTN (auto, the portable kernel forced, and on sm_90 the Hopper kernel
// forced wherever it takes the case: key lengths, D 64 or 128) and TORCH_SDPA against the float64
// reference; SAGE_ATTN and SPARSE_BLOCK refuse.
TEST_P(BackendMatrixCuda, CausalCasesAgainstFloat64Reference) {
  DATTN_SKIP_WITHOUT_CUDA();
  const AttentionBackend& be = backend_by_name(GetParam());
  if (const Support avail = backend_availability(be, kCuda, availability_shape()); !avail.ok)
    GTEST_SKIP() << be.name() << " is not available on cuda: " << avail.reason;
  std::vector<test::MatrixShape> shapes(std::begin(test::kCausalShapes), std::end(test::kCausalShapes));
  shapes.push_back({"large1000", 1, 1000, 1000, 2, 2});
  std::vector<json> extras{json::object()};
  if (is(be, "FLASH_ATTN")) extras.push_back({{"kernel", "portable"}});
  const int supported = test::for_each_causal_case(
      matrix(), be, shapes, test::kMatrixHeadDims, [&](AttentionCase& c, const std::string& what) {
        const std::vector<double> ref = reference(c);
        std::vector<json> case_extras = extras;
        const int cc = cuda_compute_capability();
        if (is(be, "FLASH_ATTN") && cc >= 90 && cc < 100 && c.key_mask.empty() &&
            (c.shape.head_dim == 64 || c.shape.head_dim == 128))
          case_extras.push_back({{"kernel", "hopper"}});
        for (const json& extra : case_extras) {
          test::reset_output(c);
          matrix().run_checked(be, c, extra, ref, matrix().limits_for(be, c.shape.dtype), what + " " + extra.dump(),
                               " causal");
        }
      });
  if (test::claims_causal(be)) {
    EXPECT_GT(supported, 0) << be.name() << " claims causal but ran none of the causal cases";
  } else {
    EXPECT_EQ(supported, 0) << be.name() << " accepts causal problems on cuda but has no causal path";
    EXPECT_EQ(be.supports({1, 64, 64, 2, 2, 64, DType::BF16, MaskKind::Causal}, kCuda).reason,
              "causal masks are supported only by FLASH_ATTN and TORCH_SDPA");
  }
}

// Causal non-finite cases. FLASH_ATTN on CUDA leaves out the NaN-in-a-value case (its diagonal tile
// multiplies hidden keys' zero weights with their V: docs/backend-semantics.md).
TEST_P(BackendMatrixCuda, CausalNonFiniteInputsPropagateAsTheReference) {
  DATTN_SKIP_WITHOUT_CUDA();
  const AttentionBackend& be = backend_by_name(GetParam());
  if (!test::claims_causal(be)) GTEST_SKIP() << be.name() << " refuses causal problems";
  if (const Support avail = backend_availability(be, kCuda, availability_shape()); !avail.ok)
    GTEST_SKIP() << be.name() << " is not available on cuda: " << avail.reason;
  const test::NonfiniteOptions opt{.causal = true, .values = !is(be, "FLASH_ATTN")};
  EXPECT_GT(test::run_nonfinite_cases(matrix(), be, json::object(), reference, "", opt), 0);
}

INSTANTIATE_TEST_SUITE_P(BackendMatrixCuda, BackendMatrixCuda, ::testing::ValuesIn(test::registered_backend_names()),
                         [](const auto& info) { return info.param; });

TEST(BackendMatrixCudaSurface, TorchSdpaTakesFp32Bf16Fp16AndEveryMask) {
  DATTN_SKIP_WITHOUT_CUDA();
  const AttentionBackend& be = backend_by_name("TORCH_SDPA");
  EXPECT_EQ(be.surface(kCuda).dtypes, (std::vector<DType>{DType::F32, DType::BF16, DType::F16}));
  for (DType t : kMatrixDTypes)
    for (MaskKind m : {MaskKind::None, MaskKind::KeyPadding, MaskKind::General, MaskKind::Causal})
      for (std::int64_t D : {1, 64, 72, 256, 520}) {
        const AttentionShape s{1, 64, 64, 2, 2, D, t, m};
        EXPECT_TRUE(be.supports(s, kCuda).ok) << s.describe() << ": " << be.supports(s, kCuda).reason;
      }
  EXPECT_EQ(be.supports({1, 64, 64, 2, 2, 64, DType::F64, MaskKind::None}, kCuda).reason,
            "dtype fp64 not in {fp32, bf16, fp16}");
}

// ---- golden cases from diffusers, on CUDA (support/backend_matrix.cc) -------------------------------
TEST(BackendMatrixGoldenCuda, WanTinySelfAndCrossAttention) {
  DATTN_SKIP_WITHOUT_CUDA();
  test::golden_wan_tiny_self_and_cross(matrix());
}

TEST(BackendMatrixGoldenCuda, Hv15MaskedJointAttention) {
  DATTN_SKIP_WITHOUT_CUDA();
  test::golden_hv15_masked_joint(matrix());
}

// ---- TORCH_SDPA's CUDA kernel ------------------------------------------------------------------------
const AttentionBackend& sdpa() { return backend_by_name("TORCH_SDPA"); }

// 20000 keys: 79 chunks of the kernel's blocked key sums (and ~80x the keys of the matrix), with key
// padding that ends mid-chunk and a scattered key mask. fp32 stays within 1e-5 (blocked sums).
TEST(CudaSdpa, LargeSk) {
  DATTN_SKIP_WITHOUT_CUDA();
  for (DType dt : kMatrixDTypes)
    for (MaskMode mm : {MaskMode::None, MaskMode::Lengths, MaskMode::KeyMask}) {
      AttentionCase c = test::make_random_case({1, 64, 20000, 2, 2, 128, dt, MaskKind::None}, mm, test::fresh_seed());
      const std::string what =
          matrix().label(sdpa(), c.shape, "Sk=20000 mask=" + std::string(test::mask_mode_name(mm)));
      SCOPED_TRACE(what);
      ASSERT_TRUE(matrix().check_support(sdpa(), c.shape));
      matrix().run_checked(sdpa(), c, json::object(), reference(c), exact_limits(dt), what, " Sk=20000");
    }
}

// Head dims that are no multiple of 32, 1, and above 256 (the kernel's multi-slab path: 300, 520).
TEST(CudaSdpa, UnusualHeadDims) {
  DATTN_SKIP_WITHOUT_CUDA();
  for (std::int64_t D : {1, 8, 40, 72, 200, 300, 520})
    for (DType dt : {DType::F32, DType::BF16}) {
      AttentionCase c = test::make_random_case({2, 33, 70, 4, 2, D, dt, MaskKind::None}, MaskMode::Lengths,
                                               test::fresh_seed());
      const std::string what = matrix().label(sdpa(), c.shape, "odd head dim, key_lengths");
      SCOPED_TRACE(what);
      ASSERT_TRUE(matrix().check_support(sdpa(), c.shape));
      matrix().run_checked(sdpa(), c, json::object(), reference(c), exact_limits(dt), what, " odd D");
    }
}

// Boolean per-head and broadcast masks on top of key padding, with rows that the mask hides entirely.
TEST(CudaSdpa, BooleanGeneralMasks) {
  DATTN_SKIP_WITHOUT_CUDA();
  for (std::int64_t mask_heads : {1, 4})
    for (DType dt : kMatrixDTypes) {
      AttentionCase c = test::make_random_case({2, 70, 150, 4, 2, 64, dt, MaskKind::None}, MaskMode::Lengths,
                                               test::fresh_seed());
      std::mt19937_64 rng(c.seed ^ 0xb001);
      std::bernoulli_distribution keep(0.6);
      c.general_mask.resize(std::size_t(2 * mask_heads * 70 * 150));
      for (auto& m : c.general_mask) m = keep(rng);
      for (std::int64_t i = 0; i < 150; ++i) c.general_mask[5 * 150 + i] = 0;  // (b 0, head 0, row 5) hidden
      c.general_mask_heads = mask_heads;
      c.shape.mask = MaskKind::General;
      const std::string what = matrix().label(sdpa(), c.shape, "boolean mask heads=" + std::to_string(mask_heads));
      SCOPED_TRACE(what);
      ASSERT_TRUE(matrix().check_support(sdpa(), c.shape));
      matrix().run_checked(sdpa(), c, json::object(), reference(c), exact_limits(dt), what, " general");
    }
}

// Additive fp32 masks (finite biases and -inf) per head, with key padding; one row all -inf.
TEST(CudaSdpa, AdditiveGeneralMasks) {
  DATTN_SKIP_WITHOUT_CUDA();
  constexpr std::int64_t B = 2, Sq = 70, Sk = 150, H = 4, kHidden = 9;  // row kHidden of (b 1, head 2)
  for (DType dt : kMatrixDTypes) {
    AttentionCase c = test::make_random_case({B, Sq, Sk, H, 2, 64, dt, MaskKind::None}, MaskMode::KeyMask,
                                             test::fresh_seed());
    std::mt19937_64 rng(c.seed ^ 0xadd);
    std::vector<float> bias = test::gaussian(std::size_t(B * H * Sq * Sk), rng, 0.0f, 2.0f);
    std::bernoulli_distribution hide(0.25);
    for (float& x : bias)
      if (hide(rng)) x = -std::numeric_limits<float>::infinity();
    const std::size_t hidden_row = std::size_t(((1 * H + 2) * Sq + kHidden) * Sk);
    std::fill(bias.begin() + hidden_row, bias.begin() + hidden_row + Sk, -std::numeric_limits<float>::infinity());
    AttentionProblem p = c.problem();
    p.mask = GeneralMask{GeneralMaskType::Additive, bias.data(), H};
    p.shape.mask = MaskKind::General;
    const std::string what = matrix().label(sdpa(), p.shape, "additive mask");
    SCOPED_TRACE(what);
    ASSERT_TRUE(matrix().check_support(sdpa(), p.shape));
    std::vector<double> ref;
    attention_reference_f64(p, ref);
    std::size_t bad_guards = 0;
    try {
      const test::DeviceProblem dp(p);
      sdpa().run(dp.problem(), json::object(), kCuda);
      check_device("TORCH_SDPA additive mask");
      bad_guards = dp.download(c.out.data());
    } catch (const std::exception& e) {
      FAIL() << what << ": run threw: " << e.what();
    }
    EXPECT_EQ(bad_guards, 0u) << what << ": guard bytes overwritten";
    const std::vector<double> got = c.output_f64();
    const double* row = &got[std::size_t(((1 * Sq + kHidden) * H + 2) * 64)];
    EXPECT_TRUE(std::all_of(row, row + 64, [](double x) { return x == 0.0; })) << what << ": hidden row not zero";
    ErrorStats st;
    const std::string why = test::check_output(c, ref, exact_limits(dt), &st);  // NaN/Inf, then errors
    EXPECT_TRUE(why.empty()) << what << ": " << why << " [seed " << c.seed << "]";
    (why.empty() ? matrix().report()["TORCH_SDPA"].passed : matrix().report()["TORCH_SDPA"].failed)++;
  }
}

}  // namespace
}  // namespace dattn
