// Every registered backend against the float64 reference over a matrix of head dims, dtypes, masks and
// shapes on the CPU, in the spirit of llama.cpp's test-backend-ops; plus the golden diffusers cases.
// Unsupported combinations are counted, never passed; a summary table is printed at the end.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "attention/backends/sparse_block/block_mask.h"
#include "dattn/attention/backend.h"
#include "dattn/attention/reference.h"
#include "dattn/attention/registry.h"
#include "dattn/io/safetensors.h"
#include "support/attention_cases.h"
#include "support/golden_dir.h"

namespace dattn {
namespace {

using nlohmann::json;
using test::AttentionCase;
using test::Limits;
using test::MaskMode;
constexpr Device kCpu = Device::CPU;

// ---- bookkeeping: per-backend counts, printed as a table after all tests -------------------------
struct Tally {
  int passed = 0, failed = 0, unsupported = 0;
  std::set<std::string> reasons;
  std::map<std::string, double> worst_rel_l2;  // per dtype (and "vs golden"), to show the limits' margin
};
std::map<std::string, Tally>& tallies() {
  static std::map<std::string, Tally> t;
  return t;
}

class SummaryTable : public ::testing::Environment {
 public:
  void TearDown() override {
    if (tallies().empty()) return;
    std::printf("\nBackend matrix summary (CPU)\n%-14s %7s %7s %12s\n", "backend", "passed", "failed", "unsupported");
    for (const AttentionBackend* be : registered_backends()) {
      auto it = tallies().find(std::string(be->name()));
      if (it == tallies().end()) continue;
      const Tally& t = it->second;
      std::printf("%-14s %7d %7d %12d\n", it->first.c_str(), t.passed, t.failed, t.unsupported);
      for (const auto& [k, e] : t.worst_rel_l2) std::printf("    worst rel_l2 %-16s %.2e\n", k.c_str(), e);
      for (const auto& r : t.reasons) std::printf("    unsupported: %s\n", r.c_str());
    }
    std::fflush(stdout);
  }
};
[[maybe_unused]] ::testing::Environment* const kSummary = ::testing::AddGlobalTestEnvironment(new SummaryTable);

bool is(const AttentionBackend& be, std::string_view name) { return be.name() == name; }

// ---- acceptance limits ----------------------------------------------------------------------------
// Exact backends (FLASH_ATTN, TORCH_SDPA, SPARSE_BLOCK at density 1 or against its kept-block
// reference) compute in fp32 from inputs that are exact in their dtype, so the error is fp32
// rounding accumulated over <= 200 keys (~sqrt(Sk) * 6e-8 ~ 1e-6, limit 1e-5) plus one rounding of
// the output: bf16 has 8 significant bits (unit roundoff 2^-9, ~1.1e-3 rms over uniform rounding
// errors; limit 6e-3 ~ 2^-8 with margin), fp16 11 bits (2^-12 ~ 2.4e-4; limit 1e-3).
Limits exact_limits(DType t) {
  switch (t) {
    case DType::BF16: return {6e-3, 0.9999};
    case DType::F16: return {1e-3, 0.99999};
    default: return {1e-5, 0.9999999};
  }
}
// SAGE_ATTN: INT8 Q/K (127 levels per block) and FP8 e4m3 P and V (3 mantissa bits: relative
// rounding up to 2^-4, ~3.6e-2 rms). The per-key errors are independent and average out in P.V, but
// on Gaussian inputs the output is itself an average of uncorrelated V rows and shrinks at the same
// rate, so the relative error stays near e4m3's rms rounding: 3.5-3.9e-2 observed (docs: 1-3e-2).
// 0.05 leaves margin; cosine 0.999 (SageAttention's usual bar) is rel_l2 ~0.045 for unbiased errors.
constexpr Limits kSageLimits{0.05, 0.999};
Limits limits_for(const AttentionBackend& be, DType t) { return is(be, "SAGE_ATTN") ? kSageLimits : exact_limits(t); }

std::string label(const AttentionBackend& be, const AttentionShape& s, std::string_view what) {
  return std::string(be.name()) + " D=" + std::to_string(s.head_dim) + " " + std::string(dtype_name(s.dtype)) + " " +
         std::string(what);
}

// Records an unsupported case; returns true when `s` is ok.
bool check_support(const AttentionBackend& be, const AttentionShape& shape) {
  const Support s = be.supports(shape, kCpu);
  if (!s.ok) {
    Tally& t = tallies()[std::string(be.name())];
    ++t.unsupported;
    t.reasons.insert(s.reason);
    EXPECT_FALSE(s.reason.empty()) << be.name() << " rejects " << shape.describe() << " without a reason";
  }
  return s.ok;
}

// Runs be on c with `extra` (defaults filled in) and checks the output against `ref`. Records the
// result; returns the output as doubles (empty when the run threw).
std::vector<double> run_checked(const AttentionBackend& be, AttentionCase& c, const json& extra,
                                const std::vector<double>& ref, const Limits& lim, const std::string& what,
                                const std::string& stat_group = "") {
  Tally& t = tallies()[std::string(be.name())];
  const AttentionProblem p = c.problem();
  try {
    p.validate();
    be.run(p, extra_with_defaults(be, extra), kCpu);
  } catch (const std::exception& e) {
    ++t.failed;
    ADD_FAILURE() << what << ": run threw: " << e.what() << " [seed " << c.seed << ", extra " << extra.dump() << "]";
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
    ADD_FAILURE() << what << ": " << why << " [" << c.shape.describe() << ", seed " << c.seed << ", extra "
                  << extra.dump() << "; replay with DATTN_TEST_SEED=" << c.seed << "]";
  }
  return c.output_f64();
}

std::vector<double> reference(AttentionCase& c) {
  std::vector<double> ref;
  attention_reference_f64(c.problem(), ref);
  return ref;
}

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
struct ShapeCase {
  const char* name;
  std::int64_t batch, seq_q, seq_k, heads_q, heads_kv;
};
constexpr ShapeCase kShapes[] = {
    {"self96", 1, 96, 96, 2, 2},         {"self77_odd", 1, 77, 77, 2, 2}, {"cross77x131", 1, 77, 131, 2, 2},
    {"gqa_hq4_hkv2", 1, 130, 130, 4, 2}, {"batch2", 2, 80, 112, 2, 2},
};
constexpr std::int64_t kHeadDims[] = {32, 64, 128};
constexpr DType kDTypes[] = {DType::F32, DType::BF16, DType::F16};
constexpr MaskMode kMasks[] = {MaskMode::None, MaskMode::Lengths, MaskMode::KeyMask, MaskMode::EmptyRow};

class BackendMatrix : public ::testing::TestWithParam<std::string> {};

TEST_P(BackendMatrix, RandomCasesAgainstFloat64Reference) {
  const AttentionBackend& be = backend_by_name(GetParam());
  const auto start = std::chrono::steady_clock::now();
  int supported = 0;
  for (const ShapeCase& sc : kShapes)
    for (std::int64_t D : kHeadDims)
      for (DType dt : kDTypes)
        for (MaskMode mm : kMasks) {
          AttentionShape shape{sc.batch, sc.seq_q, sc.seq_k, sc.heads_q, sc.heads_kv, D, dt, MaskKind::None};
          AttentionCase c = test::make_random_case(shape, mm, test::fresh_seed());  // sets batch and mask
          const std::string what =
              label(be, c.shape, "mask=" + std::string(test::mask_mode_name(mm)) + " shape=" + sc.name);
          SCOPED_TRACE(what);
          // The spec's support surfaces on CPU: SAGE is bf16/fp16 with D in {64, 128}; SPARSE is fp32.
          const bool spec_no = (is(be, "SAGE_ATTN") && (D == 32 || dt == DType::F32)) ||
                               (is(be, "SPARSE_BLOCK") && dt != DType::F32);
          if (!check_support(be, c.shape)) continue;
          EXPECT_FALSE(spec_no) << "the spec says " << be.name() << " does not support this";
          ++supported;
          const std::vector<double> ref = reference(c);
          if (!is(be, "SPARSE_BLOCK")) {
            run_checked(be, c, json::object(), ref, limits_for(be, dt), what);
            continue;
          }
          // Density 1 keeps every block: must equal dense attention.
          run_checked(be, c, {{"density", 1.0}}, ref, exact_limits(dt), what + " density=1");
          // Default extras and 64-key blocks (so that S <= 200 has several blocks to drop): exact over
          // the kept blocks.
          for (const json& extra : {json::object(), json{{"block_size", 64}}}) {
            test::reset_output(c);
            run_checked(be, c, extra, sparse_kept_reference(c, extra), exact_limits(dt),
                        what + " kept-blocks " + extra.dump());
          }
        }
  EXPECT_GT(supported, 0) << be.name() << " supports none of the matrix's cases on CPU";
  std::printf("[matrix] %s: %d supported combinations in %.2f s\n", std::string(be.name()).c_str(), supported,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const AttentionBackend* be : registered_backends()) names.emplace_back(be->name());
  return names;
}
INSTANTIATE_TEST_SUITE_P(BackendMatrixCpu, BackendMatrix, ::testing::ValuesIn(backend_names()),
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
    for (std::int64_t D : kHeadDims)
      for (DType t : kDTypes) EXPECT_TRUE(ok(exact, D, t, MaskKind::KeyPadding)) << exact << " D=" << D;
  EXPECT_FALSE(ok("SAGE_ATTN", 32, DType::BF16, MaskKind::None)) << "SAGE_ATTN: head dim 64 or 128 only";
  EXPECT_FALSE(ok("SAGE_ATTN", 64, DType::F32, MaskKind::None)) << "SAGE_ATTN: bf16/fp16 only";
  EXPECT_TRUE(ok("SAGE_ATTN", 128, DType::F16, MaskKind::KeyPadding));
  EXPECT_FALSE(ok("SPARSE_BLOCK", 64, DType::BF16, MaskKind::None)) << "SPARSE_BLOCK: fp32 on CPU";
  EXPECT_FALSE(ok("SPARSE_BLOCK", 64, DType::F16, MaskKind::None)) << "SPARSE_BLOCK: fp32 on CPU";
  EXPECT_TRUE(ok("SPARSE_BLOCK", 32, DType::F32, MaskKind::KeyPadding));
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
      const std::string what = label(be, c.shape, "K offset +-" + std::to_string(int(magnitude)) +
                                                      ", mask=" + std::string(test::mask_mode_name(mm)));
      SCOPED_TRACE(what);
      ASSERT_TRUE(check_support(be, c.shape)) << be.supports(c.shape, kCpu).reason;
      static_assert(kSageLimits.min_cosine >= 0.99, "the issue's floor");
      run_checked(be, c, json::object(), reference(c), kSageLimits, what, " K offset");
    }
}

// ---- golden cases from diffusers -------------------------------------------------------------------
std::string golden_path(const char* rel) { return dattn::testing::golden_dir() + "/" + rel; }

// Against diffusers' output, the rounding of the golden float64 inputs to the dtype adds to the
// backend's own error (our float64 reference sees the rounded inputs, diffusers did not): q, k and v
// each move by up to 2^-9 (bf16) or 2^-12 (fp16) relative. Observed for exact backends: bf16 ~2.7e-3,
// fp16 ~3.3e-4, fp32 ~5e-7 (diffusers' own fp32 rounding for hv15); limits are ~3x that. SAGE_ATTN's
// own error (~2-4e-2) dwarfs the input rounding, so it keeps its limits.
Limits golden_limits(const AttentionBackend& be, DType t) {
  if (is(be, "SAGE_ATTN")) return kSageLimits;
  switch (t) {
    case DType::BF16: return {1e-2, 0.9999};
    case DType::F16: return {1.5e-3, 0.99999};
    default: return {1e-5, 0.9999999};
  }
}

void expect_close_to_golden(const AttentionBackend& be, DType dt, const std::vector<double>& got,
                            const std::vector<double>& golden, const Limits& lim, const std::string& what) {
  if (got.empty()) return;  // the run already failed
  ErrorStats st;
  const std::string why = test::check_close(got, golden, lim, &st);
  double& worst = tallies()[std::string(be.name())].worst_rel_l2[std::string(dtype_name(dt)) + " vs golden"];
  worst = std::max(worst, st.rel_l2);
  if (!why.empty()) {
    ++tallies()[std::string(be.name())].failed;
    ADD_FAILURE() << what << " vs diffusers' golden out: " << why;
  }
}

// SPARSE_BLOCK runs the golden cases at density 1, where it is exact; its lossy mode is covered above.
json golden_extra(const AttentionBackend& be) {
  return is(be, "SPARSE_BLOCK") ? json{{"density", 1.0}} : json::object();
}

TEST(BackendMatrixGolden, WanTinySelfAndCrossAttention) {
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
            run_checked(*be, c, golden_extra(*be), reference(c), limits_for(*be, dt), what + " vs reference");
        expect_close_to_golden(*be, dt, got, g.out, golden_limits(*be, dt), what);
      }
  }
}

// HunyuanVideo-1.5 joint attention over video + text tokens (165), the last 10 being text padding. The
// golden mask [1, 1, 165, 165] lets rows < 155 see keys < 155 and hides everything from rows >= 155,
// whose output diffusers gives as 0. Only TORCH_SDPA takes that general mask; every backend also runs it as
// key padding (key_lengths = {155}), which agrees with the golden rows < 155.
TEST(BackendMatrixGolden, Hv15MaskedJointAttention) {
  const SafetensorsFile f(golden_path("hv15_tiny/cases/transformer_t2v_masked.safetensors"));
  constexpr std::int64_t kValid = 155;
  for (const char* call : {"attn_call0", "attn_call1"}) {
    const test::GoldenAttention g = test::load_golden_attention(f, call);
    const std::int64_t S = g.shape.seq_q, HD = g.shape.heads_q * g.shape.head_dim;
    ASSERT_EQ(g.mask.size(), std::size_t(S * g.shape.seq_k));
    for (std::int64_t i = 0; i < S; ++i)  // the layout this test assumes
      for (std::int64_t j = 0; j < S; ++j)
        ASSERT_EQ(g.mask[std::size_t(i * S + j)] != 0, i < kValid && j < kValid)
            << call << " mask at " << i << "," << j;
    for (const AttentionBackend* be : registered_backends())
      for (DType dt : kDTypes) {
        AttentionShape shape = g.shape;
        shape.dtype = dt;
        AttentionCase c = test::make_case_from_f64(shape, g.q, g.k, g.v);
        const std::string what = label(*be, shape, std::string("golden hv15_tiny ") + call);
        SCOPED_TRACE(what);
        // General boolean mask (mask != 0, broadcast over heads).
        c.general_mask.resize(g.mask.size());
        for (std::size_t i = 0; i < g.mask.size(); ++i) c.general_mask[i] = g.mask[i] != 0;
        c.shape.mask = MaskKind::General;
        const bool general_ok = check_support(*be, c.shape);
        EXPECT_EQ(general_ok, is(*be, "TORCH_SDPA")) << "general masks are TORCH_SDPA's alone";
        if (general_ok) {
          const std::vector<double> got = run_checked(*be, c, golden_extra(*be), reference(c), limits_for(*be, dt),
                                                      what + " general mask vs reference");
          expect_close_to_golden(*be, dt, got, g.out, golden_limits(*be, dt), what + " general mask");
        }
        // Key padding.
        c.general_mask.clear();
        c.key_lengths = {kValid};
        c.shape.mask = MaskKind::KeyPadding;
        test::reset_output(c);
        if (!check_support(*be, c.shape)) continue;
        const std::vector<double> got = run_checked(*be, c, golden_extra(*be), reference(c), limits_for(*be, dt),
                                                    what + " key_lengths=155 vs reference");
        if (got.empty()) continue;
        expect_close_to_golden(*be, dt, test::first_rows(got, 1, S, HD, kValid),
                               test::first_rows(g.out, 1, S, HD, kValid), golden_limits(*be, dt),
                               what + " key_lengths=155 rows<155");
      }
  }
}

}  // namespace
}  // namespace dattn
