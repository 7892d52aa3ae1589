// Every registered backend against the float64 reference over a matrix of head dims, dtypes, masks and
// shapes on the CPU, in the spirit of llama.cpp's test-backend-ops; plus the golden diffusers cases.
// Unsupported combinations are counted, never passed; a summary table is printed at the end.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "attention/backends/sparse_block/block_mask.h"
#include "dattn/attention/backend.h"
#include "dattn/attention/registry.h"
#include "dattn/core/error.h"
#include "support/attention_cases.h"
#include "support/backend_matrix.h"
#include "support/nonfinite_cases.h"

namespace dattn {
namespace {

using nlohmann::json;
using test::AttentionCase;
using test::is;
using test::kSageLimits;
using test::MaskMode;
using test::reference;
constexpr Device kCpu = Device::CPU;

// Runs, checks and tallies on the CPU (support/backend_matrix.h); limits in support/matrix_limits.h.
test::MatrixHarness& matrix() {
  static test::MatrixHarness h(kCpu);
  return h;
}
// The summary table after all tests, in the registry's order.
[[maybe_unused]] ::testing::Environment* const kSummary =
    ::testing::AddGlobalTestEnvironment(test::summary_environment(matrix(), test::registered_backend_names()));

// SPARSE_BLOCK at density < 1 computes exact attention over the blocks its estimator keeps. The
// reference for that is the float64 reference with a general [B, Hq, Sq, Sk] boolean mask that keeps
// exactly those keys (block mask AND key padding), so the comparison stays at the fp32 limit.
std::vector<double> sparse_kept_reference(const AttentionCase& c, const json& extra) {
  AttentionCase r = c;  // same data; the padding moves into the general mask
  const AttentionProblem p = r.problem();
  const auto& s = c.shape;
  sparse::BlockMaskOptions opt;  // the extras as SPARSE_BLOCK reads them (absent = not given)
  opt.block_size = extra.value("block_size", sparse::kDefaultBlockSize);
  if (extra.contains("density")) opt.density = extra["density"].get<double>();
  if (extra.contains("cdf_threshold")) opt.cdf_threshold = extra["cdf_threshold"].get<double>();
  opt.keep_diagonal = extra.value("keep_diagonal", true);
  const sparse::BlockMask mask = sparse::estimate_block_mask(p, opt);
  const std::int64_t bs = opt.block_size;
  r.general_mask.assign(std::size_t(s.batch * s.heads_q * s.seq_q * s.seq_k), 0);
  r.general_mask_heads = s.heads_q;
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t h = 0; h < s.heads_q; ++h)
      for (std::int64_t i = 0; i < s.seq_q; ++i) {
        std::uint8_t* row = &r.general_mask[std::size_t(((b * s.heads_q + h) * s.seq_q + i) * s.seq_k)];
        for (std::int32_t kb : mask.at(b, h, i / bs))
          for (std::int64_t j = kb * bs; j < std::min(s.seq_k, (kb + 1) * bs); ++j) row[j] = p.key_valid(b, j);
      }
  r.key_lengths.clear();
  r.key_mask.clear();
  r.shape.mask = MaskKind::General;
  return reference(r);
}

// ---- the matrix -----------------------------------------------------------------------------------
class BackendMatrix : public ::testing::TestWithParam<std::string> {};

TEST_P(BackendMatrix, RandomCasesAgainstFloat64Reference) {
  const AttentionBackend& be = backend_by_name(GetParam());
  const auto start = std::chrono::steady_clock::now();
  const int supported = test::for_each_matrix_case(
      matrix(), be, test::kMatrixShapes, test::kMatrixHeadDims, [&](AttentionCase& c, const std::string& what) {
        const std::int64_t D = c.shape.head_dim;
        const DType dt = c.shape.dtype;
        // The spec's support surfaces on CPU: SAGE is bf16/fp16 with D in {64, 128}; SPARSE is fp32.
        const bool spec_no = (is(be, "SAGE_ATTN") && (D == 32 || dt == DType::F32)) ||
                             (is(be, "SPARSE_BLOCK") && dt != DType::F32);
        EXPECT_FALSE(spec_no) << "the spec says " << be.name() << " does not support this";
        const std::vector<double> ref = reference(c);
        if (!is(be, "SPARSE_BLOCK")) {
          matrix().run_checked(be, c, json::object(), ref, matrix().limits_for(be, dt), what);
          return;
        }
        // Density 1 keeps every block: must equal dense attention.
        matrix().run_checked(be, c, {{"density", 1.0}}, ref, test::exact_limits(dt), what + " density=1");
        // Default extras and 64-key blocks (so that S <= 200 has several blocks to drop): exact over
        // the kept blocks.
        for (const json& extra : {json::object(), json{{"block_size", 64}}}) {
          test::reset_output(c);
          matrix().run_checked(be, c, extra, sparse_kept_reference(c, extra), test::exact_limits(dt),
                               what + " kept-blocks " + extra.dump());
        }
      });
  EXPECT_GT(supported, 0) << be.name() << " supports none of the matrix's cases on CPU";
  std::printf("[matrix] %s: %d supported combinations in %.2f s\n", std::string(be.name()).c_str(), supported,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

// NaN and Inf reach the output exactly where the float64 reference has them, in every backend
// (support/nonfinite_cases.h). FLASH_ATTN and SPARSE_BLOCK once turned a NaN query row into zeros and a
// NaN key into an all-zero output. SPARSE_BLOCK below density 1 is held to the reference over the
// blocks it keeps (a NaN block score sorts first, so a poisoned block is kept when the count allows).
TEST_P(BackendMatrix, NonFiniteInputsPropagateAsTheReference) {
  const AttentionBackend& be = backend_by_name(GetParam());
  int ran = test::run_nonfinite_cases(matrix(), be, test::dense_extra(be), reference, "");
  if (is(be, "SPARSE_BLOCK"))
    for (const json& extra : {json::object(), json{{"block_size", 64}}})
      ran += test::run_nonfinite_cases(
          matrix(), be, extra, [&](AttentionCase& c) { return sparse_kept_reference(c, extra); },
          "kept-blocks " + extra.dump());
  EXPECT_GT(ran, 0) << be.name() << " ran none of the non-finite cases";
}

// Causal attention (with and without key padding, and rows left without a key by a scattered key mask
// or an empty item) on square shapes: FLASH_ATTN and TORCH_SDPA run it against the float64 reference,
// every other backend refuses it with the shared reason.
TEST_P(BackendMatrix, CausalCasesAgainstFloat64Reference) {
  const AttentionBackend& be = backend_by_name(GetParam());
  const int supported = test::for_each_causal_case(
      matrix(), be, test::kCausalShapes, test::kMatrixHeadDims, [&](AttentionCase& c, const std::string& what) {
        matrix().run_checked(be, c, test::dense_extra(be), reference(c), matrix().limits_for(be, c.shape.dtype),
                             what, " causal");
      });
  if (test::claims_causal(be)) {
    EXPECT_EQ(supported, int(std::size(test::kCausalShapes) * std::size(test::kMatrixHeadDims) *
                             std::size(test::kMatrixDTypes) * std::size(test::kMatrixMasks)))
        << be.name() << " must run every causal case on CPU";
  } else {
    EXPECT_EQ(supported, 0) << be.name() << " accepts causal problems but has no causal path";
    const Support s = be.supports({1, 64, 64, 2, 2, 64, DType::BF16, MaskKind::Causal}, kCpu);
    EXPECT_FALSE(s.ok);
    EXPECT_EQ(s.reason, "causal masks are supported only by FLASH_ATTN and TORCH_SDPA");
  }
}

// The non-finite cases on causal problems: a NaN in key j or its value reaches rows >= j only.
TEST_P(BackendMatrix, CausalNonFiniteInputsPropagateAsTheReference) {
  const AttentionBackend& be = backend_by_name(GetParam());
  if (!test::claims_causal(be)) GTEST_SKIP() << be.name() << " refuses causal problems";
  const int ran = test::run_nonfinite_cases(matrix(), be, test::dense_extra(be), reference, "", {.causal = true});
  EXPECT_GT(ran, 0);
}

INSTANTIATE_TEST_SUITE_P(BackendMatrixCpu, BackendMatrix, ::testing::ValuesIn(test::registered_backend_names()),
                         [](const auto& info) { return info.param; });

// ---- support surfaces ------------------------------------------------------------------------------
TEST(BackendMatrixSurface, SpecSupportSurfacesOnCpu) {
  AttentionShape s{1, 64, 64, 2, 2, 64, DType::BF16, MaskKind::KeyPadding};
  auto ok = [&](std::string_view name, std::int64_t D, DType t, MaskKind m) {
    AttentionShape x = s;
    x.head_dim = D;
    x.dtype = t;
    x.mask = m;
    const Support r = backend_by_name(name).supports(x, kCpu);
    EXPECT_EQ(r.reason.empty(), r.ok) << name << " " << x.describe() << ": reason '" << r.reason << "'";
    return r.ok;
  };
  for (const char* exact : {"FLASH_ATTN", "TORCH_SDPA"})
    for (std::int64_t D : test::kMatrixHeadDims)
      for (DType t : test::kMatrixDTypes) EXPECT_TRUE(ok(exact, D, t, MaskKind::KeyPadding)) << exact << " D=" << D;
  EXPECT_FALSE(ok("SAGE_ATTN", 32, DType::BF16, MaskKind::None)) << "SAGE_ATTN: head dim 64 or 128 only";
  EXPECT_FALSE(ok("SAGE_ATTN", 64, DType::F32, MaskKind::None)) << "SAGE_ATTN: bf16/fp16 only";
  EXPECT_TRUE(ok("SAGE_ATTN", 128, DType::F16, MaskKind::KeyPadding));
  EXPECT_FALSE(ok("SPARSE_BLOCK", 64, DType::BF16, MaskKind::None)) << "SPARSE_BLOCK: fp32 on CPU";
  EXPECT_FALSE(ok("SPARSE_BLOCK", 64, DType::F16, MaskKind::None)) << "SPARSE_BLOCK: fp32 on CPU";
  EXPECT_TRUE(ok("SPARSE_BLOCK", 32, DType::F32, MaskKind::KeyPadding));
  // Causal is FLASH_ATTN's and TORCH_SDPA's; Sq != Sk causal is refused when the problem is validated.
  for (const AttentionBackend* be : registered_backends())
    EXPECT_EQ(ok(be->name(), 64, DType::BF16, MaskKind::Causal), test::claims_causal(*be)) << be->name();
  EXPECT_THROW((AttentionShape{1, 64, 65, 2, 2, 64, DType::F32, MaskKind::Causal}.validate()), UserError);
  // General masks are TORCH_SDPA's alone.
  for (const AttentionBackend* be : registered_backends())
    EXPECT_EQ(ok(be->name(), 64, DType::F32, MaskKind::General), is(*be, "TORCH_SDPA")) << be->name();
}

// ---- SAGE_ATTN with a large per-channel offset in K -----------------------------------------------
// Real K has channel offsets far above its spread across tokens. They add q.offset to every score of
// a row, which softmax ignores, but unsmoothed INT8 with a per-block absmax scale spends its 127
// levels on the offset, leaving few for what tells keys apart. SAGE_ATTN subtracts the per-channel
// mean first, which removes the offset exactly (up to K's bf16 rounding), so the floor
// (cosine >= 0.99) holds and so do the usual SAGE limits. Measured without smoothing: offset 20 gives
// rel_l2 6.4e-2 / cosine 0.998 (caught by the usual limits), offset 100 cosine 0.97 (caught by both).
TEST(BackendMatrixSage, LargePerChannelKeyOffsetIsSmoothedAway) {
  const AttentionBackend& be = backend_by_name("SAGE_ATTN");
  for (double magnitude : {20.0, 100.0})
    for (MaskMode mm : {MaskMode::None, MaskMode::Lengths}) {
      AttentionShape shape{1, 160, 160, 2, 2, 128, DType::BF16, MaskKind::None};
      AttentionCase c = test::make_random_case(shape, mm, test::fresh_seed());
      std::mt19937_64 rng(c.seed ^ 0x5eed);
      std::vector<double> k = test::decode(c.k.data(), shape.dtype, c.k.size() / dtype_size(shape.dtype));
      std::vector<double> offset(std::size_t(shape.heads_kv * shape.head_dim));  // per (kv head, channel)
      for (double& o : offset) o = (rng() & 1) ? magnitude : -magnitude;
      for (std::size_t i = 0; i < k.size(); ++i) k[i] += offset[i % offset.size()];
      c.k = test::encode_f64(k, shape.dtype);
      const std::string what = matrix().label(be, c.shape, "K offset +-" + std::to_string(int(magnitude)) +
                                                               ", mask=" + std::string(test::mask_mode_name(mm)));
      SCOPED_TRACE(what);
      ASSERT_TRUE(matrix().check_support(be, c.shape)) << be.supports(c.shape, kCpu).reason;
      static_assert(kSageLimits.min_cosine >= 0.99, "the issue's floor");
      matrix().run_checked(be, c, json::object(), reference(c), kSageLimits, what, " K offset");
    }
}

// ---- golden cases from diffusers (support/backend_matrix.cc) ---------------------------------------
TEST(BackendMatrixGolden, WanTinySelfAndCrossAttention) { test::golden_wan_tiny_self_and_cross(matrix()); }

TEST(BackendMatrixGolden, Hv15MaskedJointAttention) { test::golden_hv15_masked_joint(matrix()); }

}  // namespace
}  // namespace dattn
