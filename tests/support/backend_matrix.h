#pragma once
// What the backend matrix does alike on the CPU (tests/attention/test_backend_matrix.cc) and on CUDA
// (test_backend_matrix_cuda.cc): one MatrixHarness per device records support and runs each case on
// its device, checks it against the float64 reference within the limits of support/matrix_limits.h
// and tallies the results (support/matrix_report.h); the shapes, head dims, dtypes and masks of the
// matrix; and the golden diffusers cases. Reports failures through GoogleTest's non-fatal assertions
// (every test binary links it) and registers nothing: the test file that owns a harness registers
// summary_environment() for it.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "dattn/attention/backend.h"
#include "dattn/core/device.h"
#include "dattn/core/dtype.h"
#include "support/attention_cases.h"
#include "support/matrix_limits.h"
#include "support/matrix_report.h"

namespace dattn::test {

// ---- the matrix's cases -----------------------------------------------------------------------------
struct MatrixShape {
  const char* name;
  std::int64_t batch, seq_q, seq_k, heads_q, heads_kv;
};
inline constexpr MatrixShape kMatrixShapes[] = {
    {"self96", 1, 96, 96, 2, 2},         {"self77_odd", 1, 77, 77, 2, 2}, {"cross77x131", 1, 77, 131, 2, 2},
    {"gqa_hq4_hkv2", 1, 130, 130, 4, 2}, {"batch2", 2, 80, 112, 2, 2},
};
inline constexpr std::int64_t kMatrixHeadDims[] = {32, 64, 128};
inline constexpr DType kMatrixDTypes[] = {DType::F32, DType::BF16, DType::F16};
inline constexpr MaskMode kMatrixMasks[] = {MaskMode::None, MaskMode::Lengths, MaskMode::KeyMask, MaskMode::EmptyRow};
// Causal needs Sq == Sk: the square shapes, plus 200 (several 64-row CPU blocks, a 128-row CUDA tile
// and a partial one) with GQA.
inline constexpr MatrixShape kCausalShapes[] = {
    {"self96", 1, 96, 96, 2, 2},         {"self77_odd", 1, 77, 77, 2, 2}, {"gqa_hq4_hkv2", 1, 130, 130, 4, 2},
    {"batch2_sq80", 2, 80, 80, 2, 2},    {"gqa200", 1, 200, 200, 4, 1},
};
// The backends whose predicates accept causal problems; every other one must refuse them.
inline bool claims_causal(const AttentionBackend& be) { return is(be, "FLASH_ATTN") || is(be, "TORCH_SDPA"); }

// The float64 reference output of c.
std::vector<double> reference(AttentionCase& c);
// SPARSE_BLOCK at density 1 (exact: every block kept); {} for every other backend.
nlohmann::json dense_extra(const AttentionBackend& be);

// ---- running and checking cases on one device ------------------------------------------------------
class MatrixHarness {
 public:
  explicit MatrixHarness(Device device) : device_(device) {}
  Device device() const { return device_; }
  MatrixReport& report() { return report_; }

  // "<backend> D=<head dim> <dtype> <what>", with " cuda" after the backend on CUDA.
  std::string label(const AttentionBackend& be, const AttentionShape& s, std::string_view what) const;
  // test::limits_for on this device.
  Limits limits_for(const AttentionBackend& be, DType t) const { return test::limits_for(be, t, device_); }
  // Runs be on c here with `extra` (defaults filled in) without checking the output: "" on success,
  // else what threw (or, on CUDA, which guard bytes changed). The output payload starts as `poison`.
  std::string run(const AttentionBackend& be, AttentionCase& c, const nlohmann::json& extra,
                  std::uint8_t poison = 0xFF);
  // Records an unsupported case (and expects a reason); returns true when `shape` is supported here.
  bool check_support(const AttentionBackend& be, const AttentionShape& shape);
  // Runs be on c here with `extra` (defaults filled in) and checks the output against `ref` within
  // `lim`; records the result, the worst rel_l2 under c's dtype + stat_group. Returns the output as
  // doubles (empty when the run failed before an output existed).
  std::vector<double> run_checked(const AttentionBackend& be, AttentionCase& c, const nlohmann::json& extra,
                                  const std::vector<double>& ref, const Limits& lim, const std::string& what,
                                  const std::string& stat_group = "");
  // Compares a run's output (or rows of it) with diffusers' within golden_limits; records the result
  // under "<dtype> vs golden". Does nothing for an empty `got` (the run already failed).
  void expect_close_to_golden(const AttentionBackend& be, DType dt, const std::vector<double>& got,
                              const std::vector<double>& golden, const std::string& what);
  // The report, titled "CPU" or "CUDA: <device>", in `order` (see MatrixReport::print).
  void print_summary(const std::vector<std::string>& order = {}) const;

 private:
  Device device_;
  MatrixReport report_;
};

// Calls fn(c, what) for every case of shapes x head_dims x kMatrixDTypes x kMatrixMasks (random data
// from fresh_seed()) that `be` supports on h's device, inside SCOPED_TRACE(what); the unsupported ones
// are recorded. Returns how many fn saw.
int for_each_matrix_case(MatrixHarness& h, const AttentionBackend& be, std::span<const MatrixShape> shapes,
                         std::span<const std::int64_t> head_dims,
                         const std::function<void(AttentionCase& c, const std::string& what)>& fn);

// The same over causal problems (shape.mask = Causal, key padding from each mask mode kept): square
// `shapes` only. Refusals are recorded; returns how many fn saw.
int for_each_causal_case(MatrixHarness& h, const AttentionBackend& be, std::span<const MatrixShape> shapes,
                         std::span<const std::int64_t> head_dims,
                         const std::function<void(AttentionCase& c, const std::string& what)>& fn);

// A GoogleTest Environment that prints h's summary (in `order`) after all tests, for
// ::testing::AddGlobalTestEnvironment in the test file that owns h.
::testing::Environment* summary_environment(const MatrixHarness& h, std::vector<std::string> order = {});

// ---- golden cases from diffusers, every registered backend and dtype on h's device ------------------
// Wan tiny self- and cross-attention (blocks.0.attn_self / attn_cross).
void golden_wan_tiny_self_and_cross(MatrixHarness& h);
// HunyuanVideo-1.5 joint attention, with the golden general mask and as key padding.
void golden_hv15_masked_joint(MatrixHarness& h);

}  // namespace dattn::test
