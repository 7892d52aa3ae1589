// The backend matrix on Device::CUDA: every registered backend whose support predicate accepts a
// case runs it from device memory, against the float64 reference computed on the host, with the
// output in a device buffer between guard regions and NaN-poisoned. Same checks as the CPU matrix
// (test_backend_matrix.cc): guards, NaN/Inf first, fully masked rows exactly zero, then errors.
// Plus the golden diffusers cases on CUDA and TORCH_SDPA's own CUDA tests (large Sk, general masks,
// unusual head dims). Everything skips, with the reason, without a CUDA build or a visible GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "dattn/attention/backend.h"
#include "dattn/attention/reference.h"
#include "dattn/attention/registry.h"
#include "dattn/io/safetensors.h"
#include "support/golden_dir.h"
#include "support/attention_cases.h"
#include "support/device_case.h"

namespace dattn {
namespace {

using nlohmann::json;
using test::AttentionCase;
using test::Limits;
using test::MaskMode;
constexpr Device kCuda = Device::CUDA;

#define DATTN_SKIP_WITHOUT_CUDA()                                                 \
  do {                                                                            \
    const std::string dattn_no_cuda_ = test::cuda_unavailable_reason();           \
    if (!dattn_no_cuda_.empty()) GTEST_SKIP() << "no CUDA: " << dattn_no_cuda_;   \
  } while (0)

// ---- bookkeeping: per-backend counts, printed as a table after all tests -------------------------
struct Tally {
  int passed = 0, failed = 0, unsupported = 0;
  std::set<std::string> reasons;
  std::map<std::string, double> worst_rel_l2;
};
std::map<std::string, Tally>& tallies() {
  static std::map<std::string, Tally> t;
  return t;
}

class SummaryTable : public ::testing::Environment {
 public:
  void TearDown() override {
    if (tallies().empty()) return;
    std::printf("\nBackend matrix summary (CUDA: %s)\n%-14s %7s %7s %12s\n", cuda_device_summary().c_str(), "backend",
                "passed", "failed", "unsupported");
    for (const auto& [name, t] : tallies()) {
      std::printf("%-14s %7d %7d %12d\n", name.c_str(), t.passed, t.failed, t.unsupported);
      for (const auto& [k, e] : t.worst_rel_l2) std::printf("    worst rel_l2 %-16s %.2e\n", k.c_str(), e);
      for (const auto& r : t.reasons) std::printf("    unsupported: %s\n", r.c_str());
    }
    std::fflush(stdout);
  }
};
[[maybe_unused]] ::testing::Environment* const kSummary = ::testing::AddGlobalTestEnvironment(new SummaryTable);

bool is(const AttentionBackend& be, std::string_view name) { return be.name() == name; }

// ---- acceptance limits ----------------------------------------------------------------------------
// The CPU matrix's limits (see its comments): fp32 1e-5, bf16 6e-3, fp16 1e-3 for exact backends. A GPU
// fp32 kernel sums in another order than the CPU (warp-wide dot products, per-lane accumulators), but
// its rounding is of the same size (~1e-6 at these lengths; TORCH_SDPA blocks its key sums so that
// even Sk = 20000 stays near 1e-6), so fp32 keeps 1e-5. FLASH_ATTN on CUDA: the issue asks for bf16
// rel L2 3e-3 (output rounding alone is ~1.1e-3 rms) and fp16 1e-3.
Limits exact_limits(DType t) {
  switch (t) {
    case DType::BF16: return {6e-3, 0.9999};
    case DType::F16: return {1e-3, 0.99999};
    default: return {1e-5, 0.9999999};
  }
}
constexpr Limits kSageLimits{0.05, 0.999};  // as on the CPU: INT8 Q.K, FP8 P and V
Limits limits_for(const AttentionBackend& be, DType t) {
  if (is(be, "SAGE_ATTN")) return kSageLimits;
  if (is(be, "FLASH_ATTN") && t == DType::BF16) return {3e-3, 0.9999};
  return exact_limits(t);
}

std::string label(const AttentionBackend& be, const AttentionShape& s, std::string_view what) {
  return std::string(be.name()) + " cuda D=" + std::to_string(s.head_dim) + " " + std::string(dtype_name(s.dtype)) +
         " " + std::string(what);
}

// Records an unsupported case; returns true when `shape` is supported on CUDA.
bool check_support(const AttentionBackend& be, const AttentionShape& shape) {
  const Support s = be.supports(shape, kCuda);
  if (!s.ok) {
    Tally& t = tallies()[std::string(be.name())];
    ++t.unsupported;
    t.reasons.insert(s.reason);
    EXPECT_FALSE(s.reason.empty()) << be.name() << " rejects " << shape.describe() << " without a reason";
  }
  return s.ok;
}

std::vector<double> reference(AttentionCase& c) {
  std::vector<double> ref;
  attention_reference_f64(c.problem(), ref);
  return ref;
}

// Runs be on CUDA and checks the output against `ref`; records the result. Returns the output as
// doubles (empty when the run failed before an output existed).
std::vector<double> run_checked(const AttentionBackend& be, AttentionCase& c, const json& extra,
                                const std::vector<double>& ref, const Limits& lim, const std::string& what,
                                const std::string& stat_group = "") {
  Tally& t = tallies()[std::string(be.name())];
  const std::string replay = " [" + c.shape.describe() + ", seed " + std::to_string(c.seed) + ", extra " +
                             extra.dump() + "; replay with DATTN_TEST_SEED=" + std::to_string(c.seed) + "]";
  if (const std::string err = test::run_case_on_cuda(be, c, extra); !err.empty()) {
    ++t.failed;
    ADD_FAILURE() << what << ": " << err << replay;
    return {};
  }
  ErrorStats st;
  const std::string why = test::check_output(c, ref, lim, &st);
  double& worst = t.worst_rel_l2[std::string(dtype_name(c.shape.dtype)) + stat_group];
  worst = std::max(worst, st.rel_l2);
  if (std::getenv("DATTN_MATRIX_VERBOSE")) std::printf("[case] %s: %s\n", what.c_str(), describe(st).c_str());
  if (why.empty()) {
    ++t.passed;
  } else {
    ++t.failed;
    ADD_FAILURE() << what << ": " << why << replay;
  }
  return c.output_f64();
}

// SPARSE_BLOCK runs at density 1 here (exact); its kept-block checks live in the CPU matrix.
json matrix_extra(const AttentionBackend& be) { return is(be, "SPARSE_BLOCK") ? json{{"density", 1.0}} : json::object(); }

// ---- the matrix -----------------------------------------------------------------------------------
struct ShapeCase {
  const char* name;
  std::int64_t batch, seq_q, seq_k, heads_q, heads_kv;
};
// The CPU matrix's shapes plus one larger: 1000 is no multiple of any tile (16, 32, 64, 128).
constexpr ShapeCase kShapes[] = {
    {"self96", 1, 96, 96, 2, 2},         {"self77_odd", 1, 77, 77, 2, 2}, {"cross77x131", 1, 77, 131, 2, 2},
    {"gqa_hq4_hkv2", 1, 130, 130, 4, 2}, {"batch2", 2, 80, 112, 2, 2},     {"large1000", 1, 1000, 1000, 2, 2},
};
constexpr DType kDTypes[] = {DType::F32, DType::BF16, DType::F16};
constexpr MaskMode kMasks[] = {MaskMode::None, MaskMode::Lengths, MaskMode::KeyMask, MaskMode::EmptyRow};

class BackendMatrixCuda : public ::testing::TestWithParam<std::string> {};

TEST_P(BackendMatrixCuda, RandomCasesAgainstFloat64Reference) {
  DATTN_SKIP_WITHOUT_CUDA();
  const AttentionBackend& be = backend_by_name(GetParam());
  if (const Support avail = backend_availability(be, kCuda); !avail.ok) {
    tallies()[std::string(be.name())].reasons.insert("not available: " + avail.reason);
    GTEST_SKIP() << be.name() << " is not available on cuda: " << avail.reason;
  }
  std::vector<std::int64_t> head_dims{32, 64, 128};
  if (is(be, "TORCH_SDPA")) head_dims.push_back(256);
  const auto start = std::chrono::steady_clock::now();
  int supported = 0;
  for (const ShapeCase& sc : kShapes)
    for (std::int64_t D : head_dims)
      for (DType dt : kDTypes)
        for (MaskMode mm : kMasks) {
          AttentionShape shape{sc.batch, sc.seq_q, sc.seq_k, sc.heads_q, sc.heads_kv, D, dt, MaskKind::None};
          AttentionCase c = test::make_random_case(shape, mm, test::fresh_seed());  // sets batch and mask
          const std::string what =
              label(be, c.shape, "mask=" + std::string(test::mask_mode_name(mm)) + " shape=" + sc.name);
          SCOPED_TRACE(what);
          if (!check_support(be, c.shape)) continue;
          ++supported;
          run_checked(be, c, matrix_extra(be), reference(c), limits_for(be, dt), what);
        }
  EXPECT_GT(supported, 0) << be.name() << " is available on cuda but supports none of the matrix's cases";
  std::printf("[matrix cuda] %s: %d supported combinations in %.2f s\n", std::string(be.name()).c_str(), supported,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const AttentionBackend* be : registered_backends()) names.emplace_back(be->name());
  return names;
}
INSTANTIATE_TEST_SUITE_P(BackendMatrixCuda, BackendMatrixCuda, ::testing::ValuesIn(backend_names()),
                         [](const auto& info) { return info.param; });

TEST(BackendMatrixCudaSurface, TorchSdpaTakesFp32Bf16Fp16AndEveryMask) {
  DATTN_SKIP_WITHOUT_CUDA();
  const AttentionBackend& be = backend_by_name("TORCH_SDPA");
  EXPECT_EQ(be.surface(kCuda).dtypes, (std::vector<DType>{DType::F32, DType::BF16, DType::F16}));
  for (DType t : kDTypes)
    for (MaskKind m : {MaskKind::None, MaskKind::KeyPadding, MaskKind::General})
      for (std::int64_t D : {1, 64, 72, 256, 520}) {
        const AttentionShape s{1, 64, 64, 2, 2, D, t, m};
        EXPECT_TRUE(be.supports(s, kCuda).ok) << s.describe() << ": " << be.supports(s, kCuda).reason;
      }
  EXPECT_EQ(be.supports({1, 64, 64, 2, 2, 64, DType::F64, MaskKind::None}, kCuda).reason,
            "dtype fp64 not in {fp32, bf16, fp16}");
}

// ---- golden cases from diffusers, on CUDA ------------------------------------------------------------
std::string golden_path(const char* rel) { return dattn::testing::golden_dir() + "/" + rel; }

// As on the CPU (test_backend_matrix.cc): the inputs' rounding to the dtype dominates against diffusers.
Limits golden_limits(const AttentionBackend& be, DType t) {
  if (is(be, "SAGE_ATTN")) return kSageLimits;
  switch (t) {
    case DType::BF16: return {1e-2, 0.9999};
    case DType::F16: return {1.5e-3, 0.99999};
    default: return {1e-5, 0.9999999};
  }
}

void expect_close_to_golden(const AttentionBackend& be, DType dt, const std::vector<double>& got,
                            const std::vector<double>& golden, const std::string& what) {
  if (got.empty()) return;  // the run already failed
  ErrorStats st;
  const std::string why = test::check_close(got, golden, golden_limits(be, dt), &st);
  double& worst = tallies()[std::string(be.name())].worst_rel_l2[std::string(dtype_name(dt)) + " vs golden"];
  worst = std::max(worst, st.rel_l2);
  if (!why.empty()) {
    ++tallies()[std::string(be.name())].failed;
    ADD_FAILURE() << what << " vs diffusers' golden out: " << why;
  }
}

TEST(BackendMatrixGoldenCuda, WanTinySelfAndCrossAttention) {
  DATTN_SKIP_WITHOUT_CUDA();
  const SafetensorsFile f(golden_path("wan_tiny/cases/transformer_t2v_scalar_t.safetensors"));
  for (const char* role : {"self", "cross"}) {
    const test::GoldenAttention g = test::load_golden_attention(f, std::string("blocks.0.attn_") + role);
    for (const AttentionBackend* be : registered_backends())
      for (DType dt : kDTypes) {
        AttentionShape shape = g.shape;
        shape.dtype = dt;
        const std::string what = label(*be, shape, std::string("golden wan_tiny attn_") + role);
        SCOPED_TRACE(what);
        if (!check_support(*be, shape)) continue;
        AttentionCase c = test::make_case_from_f64(shape, g.q, g.k, g.v);
        const std::vector<double> got =
            run_checked(*be, c, matrix_extra(*be), reference(c), limits_for(*be, dt), what + " vs reference");
        expect_close_to_golden(*be, dt, got, g.out, what);
      }
  }
}

// HunyuanVideo-1.5 joint attention: 165 tokens, the last 10 text padding (see the CPU test). TORCH_SDPA
// runs the golden general mask; every backend that can runs it as key padding (155 valid keys).
TEST(BackendMatrixGoldenCuda, Hv15MaskedJointAttention) {
  DATTN_SKIP_WITHOUT_CUDA();
  const SafetensorsFile f(golden_path("hv15_tiny/cases/transformer_t2v_masked.safetensors"));
  constexpr std::int64_t kValid = 155;
  for (const char* call : {"attn_call0", "attn_call1"}) {
    const test::GoldenAttention g = test::load_golden_attention(f, call);
    const std::int64_t S = g.shape.seq_q, HD = g.shape.heads_q * g.shape.head_dim;
    ASSERT_EQ(g.mask.size(), std::size_t(S * g.shape.seq_k));
    for (const AttentionBackend* be : registered_backends())
      for (DType dt : kDTypes) {
        AttentionShape shape = g.shape;
        shape.dtype = dt;
        AttentionCase c = test::make_case_from_f64(shape, g.q, g.k, g.v);
        const std::string what = label(*be, shape, std::string("golden hv15_tiny ") + call);
        SCOPED_TRACE(what);
        c.general_mask.resize(g.mask.size());
        for (std::size_t i = 0; i < g.mask.size(); ++i) c.general_mask[i] = g.mask[i] != 0;
        c.shape.mask = MaskKind::General;
        const bool general_ok = check_support(*be, c.shape);
        EXPECT_EQ(general_ok, is(*be, "TORCH_SDPA")) << "on a GPU, TORCH_SDPA (only) takes general masks";
        if (general_ok) {
          const std::vector<double> got = run_checked(*be, c, matrix_extra(*be), reference(c), limits_for(*be, dt),
                                                      what + " general mask vs reference");
          expect_close_to_golden(*be, dt, got, g.out, what + " general mask");
        }
        c.general_mask.clear();
        c.key_lengths = {kValid};
        c.shape.mask = MaskKind::KeyPadding;
        test::reset_output(c);
        if (!check_support(*be, c.shape)) continue;
        const std::vector<double> got = run_checked(*be, c, matrix_extra(*be), reference(c), limits_for(*be, dt),
                                                    what + " key_lengths=155 vs reference");
        if (got.empty()) continue;
        expect_close_to_golden(*be, dt, test::first_rows(got, 1, S, HD, kValid),
                               test::first_rows(g.out, 1, S, HD, kValid), what + " key_lengths=155 rows<155");
      }
  }
}

// ---- TORCH_SDPA's CUDA kernel ------------------------------------------------------------------------
const AttentionBackend& sdpa() { return backend_by_name("TORCH_SDPA"); }

// 20000 keys: 79 chunks of the kernel's blocked key sums (and ~80x the keys of the matrix), with key
// padding that ends mid-chunk and a scattered key mask. fp32 stays within 1e-5 (blocked sums).
TEST(CudaSdpa, LargeSk) {
  DATTN_SKIP_WITHOUT_CUDA();
  for (DType dt : kDTypes)
    for (MaskMode mm : {MaskMode::None, MaskMode::Lengths, MaskMode::KeyMask}) {
      AttentionCase c = test::make_random_case({1, 64, 20000, 2, 2, 128, dt, MaskKind::None}, mm, test::fresh_seed());
      const std::string what = label(sdpa(), c.shape, "Sk=20000 mask=" + std::string(test::mask_mode_name(mm)));
      SCOPED_TRACE(what);
      ASSERT_TRUE(check_support(sdpa(), c.shape));
      run_checked(sdpa(), c, json::object(), reference(c), exact_limits(dt), what, " Sk=20000");
    }
}

// Head dims that are no multiple of 32, 1, and above 256 (the kernel's multi-slab path: 300, 520).
TEST(CudaSdpa, UnusualHeadDims) {
  DATTN_SKIP_WITHOUT_CUDA();
  for (std::int64_t D : {1, 8, 40, 72, 200, 300, 520})
    for (DType dt : {DType::F32, DType::BF16}) {
      AttentionCase c = test::make_random_case({2, 33, 70, 4, 2, D, dt, MaskKind::None}, MaskMode::Lengths,
                                               test::fresh_seed());
      const std::string what = label(sdpa(), c.shape, "odd head dim, key_lengths");
      SCOPED_TRACE(what);
      ASSERT_TRUE(check_support(sdpa(), c.shape));
      run_checked(sdpa(), c, json::object(), reference(c), exact_limits(dt), what, " odd D");
    }
}

// Boolean per-head and broadcast masks on top of key padding, with rows that the mask hides entirely.
TEST(CudaSdpa, BooleanGeneralMasks) {
  DATTN_SKIP_WITHOUT_CUDA();
  for (std::int64_t mask_heads : {1, 4})
    for (DType dt : kDTypes) {
      AttentionCase c = test::make_random_case({2, 70, 150, 4, 2, 64, dt, MaskKind::None}, MaskMode::Lengths,
                                               test::fresh_seed());
      std::mt19937_64 rng(c.seed ^ 0xb001);
      std::bernoulli_distribution keep(0.6);
      c.general_mask.resize(std::size_t(2 * mask_heads * 70 * 150));
      for (auto& m : c.general_mask) m = keep(rng);
      for (std::int64_t i = 0; i < 150; ++i) c.general_mask[5 * 150 + i] = 0;  // (b 0, head 0, row 5) hidden
      c.general_mask_heads = mask_heads;
      c.shape.mask = MaskKind::General;
      const std::string what = label(sdpa(), c.shape, "boolean mask heads=" + std::to_string(mask_heads));
      SCOPED_TRACE(what);
      ASSERT_TRUE(check_support(sdpa(), c.shape));
      run_checked(sdpa(), c, json::object(), reference(c), exact_limits(dt), what, " general");
    }
}

// Additive fp32 masks (finite biases and -inf) per head, with key padding; one row all -inf.
TEST(CudaSdpa, AdditiveGeneralMasks) {
  DATTN_SKIP_WITHOUT_CUDA();
  constexpr std::int64_t B = 2, Sq = 70, Sk = 150, H = 4, kHidden = 9;  // row kHidden of (b 1, head 2)
  for (DType dt : kDTypes) {
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
    const std::string what = label(sdpa(), p.shape, "additive mask");
    SCOPED_TRACE(what);
    ASSERT_TRUE(check_support(sdpa(), p.shape));
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
    (why.empty() ? tallies()["TORCH_SDPA"].passed : tallies()["TORCH_SDPA"].failed)++;
  }
}

}  // namespace
}  // namespace dattn
