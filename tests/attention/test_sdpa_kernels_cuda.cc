// TORCH_SDPA's two CUDA kernels, chosen by its `kernel` extra: "gemm" (products on cuBLASLt, the default
// wherever it runs) and "rows" (one warp per query row). Each runs the backend matrix, its causal cases
// and its non-finite cases against the float64 reference; problems the GEMM kernel cuts into chunks
// (heads, then query rows) are compared with the row kernel on the GPU; and umT5's attention (unscaled,
// an additive per-head bias, padding as float32's lowest value). Skips without a CUDA build or GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "dattn/attention/backend.h"
#include "dattn/attention/reference.h"
#include "dattn/attention/registry.h"
#include "dattn/core/device.h"
#include "dattn/core/device_memory.h"
#include "support/attention_cases.h"
#include "support/backend_matrix.h"
#include "support/device_case.h"
#include "support/nonfinite_cases.h"

namespace dattn {
namespace {

using nlohmann::json;
using test::AttentionCase;
using test::MaskMode;
constexpr Device kCuda = Device::CUDA;
constexpr const char* kKernels[] = {"gemm", "rows"};

test::MatrixHarness& matrix() {
  static test::MatrixHarness h(kCuda);
  return h;
}
[[maybe_unused]] ::testing::Environment* const kSummary =
    ::testing::AddGlobalTestEnvironment(test::summary_environment(matrix()));

const AttentionBackend& sdpa() { return backend_by_name("TORCH_SDPA"); }
json kernel(const char* name) { return json{{"kernel", name}}; }

TEST(SdpaKernelsCuda, MatrixAndCausalCasesAgainstFloat64Reference) {
  DATTN_SKIP_WITHOUT_CUDA();
  const std::int64_t head_dims[] = {8, 40, 64, 128};  // 8 and 40: 16- and 80-byte head strides in bf16
  for (const char* k : kKernels) {
    auto check = [&](AttentionCase& c, const std::string& what) {
      matrix().run_checked(sdpa(), c, kernel(k), test::reference(c), test::exact_limits(c.shape.dtype),
                           what + " kernel=" + k, std::string(" ") + k);
    };
    EXPECT_GT(test::for_each_matrix_case(matrix(), sdpa(), test::kMatrixShapes, head_dims, check), 0) << k;
    EXPECT_GT(test::for_each_causal_case(matrix(), sdpa(), test::kCausalShapes, head_dims, check), 0) << k;
  }
}

// NaN/Inf in q, a seen key or value, padding keys (the GEMM kernel zeroes them before P . v) and a
// fully masked row: exactly where the reference has them, for both kernels, plain and causal.
TEST(SdpaKernelsCuda, NonFiniteInputsPropagateAsTheReference) {
  DATTN_SKIP_WITHOUT_CUDA();
  for (const char* k : kKernels)
    for (bool causal : {false, true}) {
      test::NonfiniteOptions opt;
      opt.causal = causal;
      EXPECT_GT(test::run_nonfinite_cases(matrix(), sdpa(), kernel(k), test::reference, std::string("kernel=") + k, opt),
                0);
    }
}

// Runs TORCH_SDPA with `extra` on a device copy of `host` and returns the output as floats.
std::vector<float> run_f32(const AttentionProblem& host, const json& extra) {
  const test::DeviceProblem dp(host);
  run_attention(sdpa(), dp.problem(), extra_with_defaults(sdpa(), extra), kCuda);
  check_device("TORCH_SDPA");
  std::vector<float> out(std::size_t(host.shape.batch * host.shape.seq_q * host.shape.heads_q * host.shape.head_dim));
  EXPECT_EQ(dp.download(out.data()), 0u) << "guard bytes overwritten";
  return out;
}

// Problems whose scores exceed the GEMM kernel's 256 MiB of scratch: 4200^2 fp32 scores are 67 MiB per
// head, so 3 heads per chunk and a last chunk of 1; 8300^2 are 263 MiB, so one head and 8085 query rows
// per chunk, then 215 (causal rows there must count from the chunk's first row). fp32 throughout: the
// two kernels agree to fp32 rounding.
TEST(SdpaKernelsCuda, ChunkedProblemsMatchTheRowKernel) {
  DATTN_SKIP_WITHOUT_CUDA();
  struct Case {
    AttentionShape shape;
    MaskMode mode;
  };
  const Case cases[] = {{{1, 4200, 4200, 4, 4, 64, DType::F32, MaskKind::None}, MaskMode::KeyMask},
                        {{1, 8300, 8300, 2, 1, 64, DType::F32, MaskKind::Causal}, MaskMode::Lengths}};
  for (const Case& cs : cases) {
    AttentionCase c = test::make_random_case(cs.shape, cs.mode, test::fresh_seed());
    c.shape.mask = cs.shape.mask == MaskKind::Causal ? MaskKind::Causal : c.shape.mask;  // with its padding
    SCOPED_TRACE(cs.shape.describe() + " seed " + std::to_string(c.seed));
    const AttentionProblem p = c.problem();
    const std::vector<float> gemm = run_f32(p, kernel("gemm")), rows = run_f32(p, kernel("rows"));
    double worst = 0;
    std::size_t non_finite = 0;
    for (std::size_t i = 0; i < gemm.size(); ++i) {
      if (!std::isfinite(gemm[i]) || !std::isfinite(rows[i])) ++non_finite;
      worst = std::max(worst, double(std::fabs(gemm[i] - rows[i])));
    }
    EXPECT_EQ(non_finite, 0u);
    EXPECT_LT(worst, 2e-5) << "largest |gemm - rows|";
  }
}

// umT5's attention as the text encoder runs it: scale 1, a per-head additive bias [B, H, S, S], padding
// keys at float32's lowest value (not -inf), batch 2 with different lengths, bf16.
TEST(SdpaKernelsCuda, Umt5StyleAdditiveBias) {
  DATTN_SKIP_WITHOUT_CUDA();
  constexpr std::int64_t B = 2, S = 160, H = 8, D = 64;
  const std::int64_t valid[B] = {37, 160};
  for (const char* k : kKernels) {
    AttentionCase c =
        test::make_random_case({B, S, S, H, H, D, DType::BF16, MaskKind::None}, MaskMode::None, test::fresh_seed());
    c.scale = 1.0f;
    std::mt19937_64 rng(c.seed ^ 0x75);
    std::vector<float> bias = test::gaussian(std::size_t(B * H * S * S), rng, 0.0f, 3.0f);
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t r = 0; r < H * S; ++r)
        for (std::int64_t j = valid[b]; j < S; ++j) bias[std::size_t((b * H * S + r) * S + j)] = std::numeric_limits<float>::lowest();
    AttentionProblem p = c.problem();
    p.mask = GeneralMask{GeneralMaskType::Additive, bias.data(), H};
    p.shape.mask = MaskKind::General;
    const std::string what = matrix().label(sdpa(), p.shape, std::string("umT5 bias kernel=") + k);
    SCOPED_TRACE(what);
    std::vector<double> ref;
    attention_reference_f64(p, ref);
    const test::DeviceProblem dp(p);
    run_attention(sdpa(), dp.problem(), extra_with_defaults(sdpa(), kernel(k)), kCuda);
    check_device("TORCH_SDPA umT5 bias");
    EXPECT_EQ(dp.download(c.out.data()), 0u) << what << ": guard bytes overwritten";
    ErrorStats st;
    const std::string why = test::check_output(c, ref, test::exact_limits(DType::BF16), &st);
    EXPECT_TRUE(why.empty()) << what << ": " << why;
    (why.empty() ? matrix().report()["TORCH_SDPA"].passed : matrix().report()["TORCH_SDPA"].failed)++;
  }
}

}  // namespace
}  // namespace dattn
