#include "support/backend_matrix.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <utility>

#include "dattn/attention/reference.h"
#include "dattn/attention/registry.h"
#include "dattn/io/safetensors.h"
#include "support/device_case.h"
#include "support/golden_dir.h"

namespace dattn::test {
namespace {

using nlohmann::json;

// Runs be on the CPU on c.problem() with `extra` (defaults filled in): "" on success, else what threw.
std::string run_case_on_cpu(const AttentionBackend& be, AttentionCase& c, const json& extra) {
  const AttentionProblem p = c.problem();
  try {
    p.validate();
    be.run(p, extra_with_defaults(be, extra), Device::CPU);
  } catch (const std::exception& e) {
    return std::string("run threw: ") + e.what();
  }
  return {};
}

std::string golden_path(const char* rel) { return dattn::testing::golden_dir() + "/" + rel; }

class SummaryTable : public ::testing::Environment {
 public:
  SummaryTable(const MatrixHarness& h, std::vector<std::string> order) : h_(h), order_(std::move(order)) {}
  void TearDown() override { h_.print_summary(order_); }

 private:
  const MatrixHarness& h_;
  std::vector<std::string> order_;
};

}  // namespace

std::vector<double> reference(AttentionCase& c) {
  std::vector<double> ref;
  attention_reference_f64(c.problem(), ref);
  return ref;
}

json dense_extra(const AttentionBackend& be) {
  return is(be, "SPARSE_BLOCK") ? json{{"density", 1.0}} : json::object();
}

std::string MatrixHarness::label(const AttentionBackend& be, const AttentionShape& s, std::string_view what) const {
  return std::string(be.name()) + (device_ == Device::CUDA ? " cuda" : "") + " D=" + std::to_string(s.head_dim) +
         " " + std::string(dtype_name(s.dtype)) + " " + std::string(what);
}

std::string MatrixHarness::run(const AttentionBackend& be, AttentionCase& c, const json& extra, std::uint8_t poison) {
  if (device_ == Device::CUDA) return run_case_on_cuda(be, c, extra, poison);
  std::memset(c.out.data(), poison, c.out.bytes());
  return run_case_on_cpu(be, c, extra);
}

bool MatrixHarness::check_support(const AttentionBackend& be, const AttentionShape& shape) {
  const Support s = be.supports(shape, device_);
  if (!s.ok) {
    Tally& t = report_[be.name()];
    ++t.unsupported;
    t.reasons.insert(s.reason);
    EXPECT_FALSE(s.reason.empty()) << be.name() << " rejects " << shape.describe() << " without a reason";
  }
  return s.ok;
}

std::vector<double> MatrixHarness::run_checked(const AttentionBackend& be, AttentionCase& c, const json& extra,
                                               const std::vector<double>& ref, const Limits& lim,
                                               const std::string& what, const std::string& stat_group) {
  Tally& t = report_[be.name()];
  const std::string replay = " [" + c.shape.describe() + ", seed " + std::to_string(c.seed) + ", extra " +
                             extra.dump() + "; replay with DATTN_TEST_SEED=" + std::to_string(c.seed) + "]";
  const std::string err =
      device_ == Device::CUDA ? run_case_on_cuda(be, c, extra) : run_case_on_cpu(be, c, extra);
  if (!err.empty()) {
    ++t.failed;
    ADD_FAILURE() << what << ": " << err << replay;
    return {};
  }
  ErrorStats st;
  const std::string why = check_output(c, ref, lim, &st);
  report_.note_rel_l2(be.name(), std::string(dtype_name(c.shape.dtype)) + stat_group, st.rel_l2);
  if (std::getenv("DATTN_MATRIX_VERBOSE")) std::printf("[case] %s: %s\n", what.c_str(), describe(st).c_str());
  if (why.empty()) {
    ++t.passed;
  } else {
    ++t.failed;
    ADD_FAILURE() << what << ": " << why << replay;
  }
  return c.output_f64();
}

void MatrixHarness::expect_close_to_golden(const AttentionBackend& be, DType dt, const std::vector<double>& got,
                                           const std::vector<double>& golden, const std::string& what) {
  if (got.empty()) return;  // the run already failed
  ErrorStats st;
  const std::string why = check_close(got, golden, golden_limits(be, dt), &st);
  report_.note_rel_l2(be.name(), std::string(dtype_name(dt)) + " vs golden", st.rel_l2);
  if (!why.empty()) {
    ++report_[be.name()].failed;
    ADD_FAILURE() << what << " vs diffusers' golden out: " << why;
  }
}

void MatrixHarness::print_summary(const std::vector<std::string>& order) const {
  if (report_.empty()) return;  // before asking for the device's name
  report_.print(device_ == Device::CUDA ? "CUDA: " + cuda_device_summary() : "CPU", order);
}

namespace {

int for_each_case(MatrixHarness& h, const AttentionBackend& be, std::span<const MatrixShape> shapes,
                  std::span<const std::int64_t> head_dims, bool causal,
                  const std::function<void(AttentionCase& c, const std::string& what)>& fn) {
  int supported = 0;
  for (const MatrixShape& sc : shapes)
    for (std::int64_t D : head_dims)
      for (DType dt : kMatrixDTypes)
        for (MaskMode mm : kMatrixMasks) {
          AttentionShape shape{sc.batch, sc.seq_q, sc.seq_k, sc.heads_q, sc.heads_kv, D, dt, MaskKind::None};
          AttentionCase c = make_random_case(shape, mm, fresh_seed());  // sets batch and mask
          if (causal) c.shape.mask = MaskKind::Causal;  // key padding, if any, stays
          const std::string what = h.label(be, c.shape, std::string(causal ? "causal " : "") + "mask=" +
                                                            std::string(mask_mode_name(mm)) + " shape=" + sc.name);
          SCOPED_TRACE(what);
          if (!h.check_support(be, c.shape)) continue;
          ++supported;
          fn(c, what);
        }
  return supported;
}

}  // namespace

int for_each_matrix_case(MatrixHarness& h, const AttentionBackend& be, std::span<const MatrixShape> shapes,
                         std::span<const std::int64_t> head_dims,
                         const std::function<void(AttentionCase& c, const std::string& what)>& fn) {
  return for_each_case(h, be, shapes, head_dims, false, fn);
}

int for_each_causal_case(MatrixHarness& h, const AttentionBackend& be, std::span<const MatrixShape> shapes,
                         std::span<const std::int64_t> head_dims,
                         const std::function<void(AttentionCase& c, const std::string& what)>& fn) {
  for (const MatrixShape& sc : shapes)
    EXPECT_EQ(sc.seq_q, sc.seq_k) << sc.name << ": causal shapes are square";
  return for_each_case(h, be, shapes, head_dims, true, fn);
}

::testing::Environment* summary_environment(const MatrixHarness& h, std::vector<std::string> order) {
  return new SummaryTable(h, std::move(order));
}

// SPARSE_BLOCK runs the golden cases at density 1, where it is exact; its lossy mode is covered by the
// CPU matrix's kept-block checks.
void golden_wan_tiny_self_and_cross(MatrixHarness& h) {
  const SafetensorsFile f(golden_path("wan_tiny/cases/transformer_t2v_scalar_t.safetensors"));
  for (const char* role : {"self", "cross"}) {
    const GoldenAttention g = load_golden_attention(f, std::string("blocks.0.attn_") + role);
    for (const AttentionBackend* be : registered_backends())
      for (DType dt : kMatrixDTypes) {
        AttentionShape shape = g.shape;
        shape.dtype = dt;
        const std::string what = h.label(*be, shape, std::string("golden wan_tiny attn_") + role);
        SCOPED_TRACE(what);
        if (!h.check_support(*be, shape)) continue;
        AttentionCase c = make_case_from_f64(shape, g.q, g.k, g.v);
        const std::vector<double> got =
            h.run_checked(*be, c, dense_extra(*be), reference(c), h.limits_for(*be, dt), what + " vs reference");
        h.expect_close_to_golden(*be, dt, got, g.out, what);
      }
  }
}

// HunyuanVideo-1.5 joint attention over video + text tokens (165), the last 10 being text padding. The
// golden mask [1, 1, 165, 165] lets rows < 155 see keys < 155 and hides everything from rows >= 155,
// whose output diffusers gives as 0. Only TORCH_SDPA takes that general mask (on either device); every
// backend also runs it as key padding (key_lengths = {155}), which agrees with the golden rows < 155.
void golden_hv15_masked_joint(MatrixHarness& h) {
  const SafetensorsFile f(golden_path("hv15_tiny/cases/transformer_t2v_masked.safetensors"));
  constexpr std::int64_t kValid = 155;
  for (const char* call : {"attn_call0", "attn_call1"}) {
    const GoldenAttention g = load_golden_attention(f, call);
    const std::int64_t S = g.shape.seq_q, HD = g.shape.heads_q * g.shape.head_dim;
    ASSERT_EQ(g.mask.size(), std::size_t(S * g.shape.seq_k));
    for (std::int64_t i = 0; i < S; ++i)  // the layout this test assumes
      for (std::int64_t j = 0; j < S; ++j)
        ASSERT_EQ(g.mask[std::size_t(i * S + j)] != 0, i < kValid && j < kValid)
            << call << " mask at " << i << "," << j;
    for (const AttentionBackend* be : registered_backends())
      for (DType dt : kMatrixDTypes) {
        AttentionShape shape = g.shape;
        shape.dtype = dt;
        AttentionCase c = make_case_from_f64(shape, g.q, g.k, g.v);
        const std::string what = h.label(*be, shape, std::string("golden hv15_tiny ") + call);
        SCOPED_TRACE(what);
        // General boolean mask (mask != 0, broadcast over heads).
        c.general_mask.resize(g.mask.size());
        for (std::size_t i = 0; i < g.mask.size(); ++i) c.general_mask[i] = g.mask[i] != 0;
        c.shape.mask = MaskKind::General;
        const bool general_ok = h.check_support(*be, c.shape);
        EXPECT_EQ(general_ok, is(*be, "TORCH_SDPA")) << "general masks are TORCH_SDPA's alone";
        if (general_ok) {
          const std::vector<double> got = h.run_checked(*be, c, dense_extra(*be), reference(c),
                                                        h.limits_for(*be, dt), what + " general mask vs reference");
          h.expect_close_to_golden(*be, dt, got, g.out, what + " general mask");
        }
        // Key padding.
        c.general_mask.clear();
        c.key_lengths = {kValid};
        c.shape.mask = MaskKind::KeyPadding;
        reset_output(c);
        if (!h.check_support(*be, c.shape)) continue;
        const std::vector<double> got = h.run_checked(*be, c, dense_extra(*be), reference(c), h.limits_for(*be, dt),
                                                      what + " key_lengths=155 vs reference");
        if (got.empty()) continue;
        h.expect_close_to_golden(*be, dt, first_rows(got, 1, S, HD, kValid), first_rows(g.out, 1, S, HD, kValid),
                                 what + " key_lengths=155 rows<155");
      }
  }
}

}  // namespace dattn::test
