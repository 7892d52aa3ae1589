// The Wan transformer against diffusers (golden wan_tiny: WanTransformer3DModel, 2 layers, 2 heads x 64,
// forward in float64), for a scalar timestep (T2V) and a per-token timestep (TI2V): output.sample and
// every intermediate, compared in forward order so a failure names the first one that disagrees.
#include <chrono>
#include <cstdio>

#include <gtest/gtest.h>

#include "models/wan_golden.h"

namespace dattn::testing {
namespace {

AttentionSettings backend_settings(const std::string& backend) {
  AttentionSettings s;
  if (!backend.empty()) s.config = AttentionConfig::from_json_string(R"({"default":")" + backend + R"("})");
  return s;
}

struct ForwardRun {
  Tensor sample;
  Recording rec;
  double seconds = 0;
};

ForwardRun run_case(const WanTransformer& model, const WanCase& c) {
  ForwardRun r;
  const auto t0 = std::chrono::steady_clock::now();
  r.sample = model.forward(c.hidden_states, c.timestep, c.encoder_hidden_states, r.rec.hook());
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

class WanGolden : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

// float32 on the CPU: the golden README expects ~1e-6 relative for a forward; the issue's bound is 1e-5
// (intermediates: see float32_limit).
TEST_P(WanGolden, Float32MatchesEveryIntermediate) {
  const auto& [case_name, backend] = GetParam();
  SafetensorsFile f(wan_case_path(case_name));
  const WanTransformer model =
      WanTransformer::load(wan_tiny_transformer_dir(),
                           wan_run_options(Device::CPU, DType::F32, backend_settings(backend)));
  const ForwardRun r = run_case(model, read_wan_case(f));
  ASSERT_EQ(r.sample.shape(), f.info("output.sample").shape);
  const auto cs = compare_intermediates(f, r.rec, float32_limit);
  std::printf("[wan %s %s fp32] %.1f ms\n%s", case_name.c_str(), backend.c_str(), r.seconds * 1e3, report(cs).c_str());
  if (const auto bad = first_disagreement(cs)) FAIL() << "first disagreement: " << bad->name << ": " << bad->problem;
  const ErrorStats out = compare_output(r.sample, f);
  std::printf("  output.sample: %s\n", describe(out).c_str());
  ASSERT_EQ(out.nonfinite, 0u);
  EXPECT_LE(out.rel_l2, 1e-5);
  // diffusers' own float32 forward differs from float64 by this much: dattn should be comparable.
  const ErrorStats torch32 = compare_output(tensor_from_safetensors(f, "output.sample_fp32", DType::F64), f);
  std::printf("  (diffusers float32 vs float64: %s)\n", describe(torch32).c_str());
  EXPECT_LE(out.rel_l2, 10 * torch32.rel_l2 + 1e-7);
}

INSTANTIATE_TEST_SUITE_P(Cases, WanGolden,
                         ::testing::Combine(::testing::Values("t2v_scalar_t", "ti2v_token_t"),
                                            ::testing::Values("FLASH_ATTN", "TORCH_SDPA")),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + std::get<1>(info.param);
                         });

// bf16 weights and activations (the GPU's run dtype) on the CPU: reported, and bounded at bf16 tolerance.
TEST(WanGoldenBf16, ReportsErrorAtBf16Tolerance) {
  for (const char* case_name : {"t2v_scalar_t", "ti2v_token_t"}) {
    SafetensorsFile f(wan_case_path(case_name));
    const WanTransformer model =
        WanTransformer::load(wan_tiny_transformer_dir(), wan_run_options(Device::CPU, DType::BF16));
    const ForwardRun r = run_case(model, read_wan_case(f));
    EXPECT_EQ(r.sample.dtype(), DType::BF16);
    const auto cs = compare_intermediates(f, r.rec, [](const std::string&) { return 3e-2; });
    std::printf("[wan %s bf16] %.1f ms\n%s", case_name, r.seconds * 1e3, report(cs).c_str());
    if (const auto bad = first_disagreement(cs)) ADD_FAILURE() << case_name << ": " << bad->name << ": " << bad->problem;
    const ErrorStats out = compare_output(r.sample, f);
    std::printf("  output.sample: %s\n", describe(out).c_str());
    ASSERT_EQ(out.nonfinite, 0u);
    EXPECT_LE(out.rel_l2, 2e-2) << case_name;
  }
}

// The comparison itself must be able to fail, and must name the first (in forward order) intermediate
// that disagrees, not just any: a 1e-4 relative change of one record is caught by name.
TEST(WanGoldenCheck, ADeliberatelyWrongIntermediateIsNamed) {
  SafetensorsFile f(wan_case_path("t2v_scalar_t"));
  const WanTransformer model =
      WanTransformer::load(wan_tiny_transformer_dir(), wan_run_options(Device::CPU, DType::F32));
  ForwardRun r = run_case(model, read_wan_case(f));
  ASSERT_EQ(first_disagreement(compare_intermediates(f, r.rec, float32_limit)), std::nullopt);
  for (const char* victim : {"blocks.1.attn2.out", "rope.sin", "blocks.0.attn_cross.k"}) {
    Recording bad = r.rec;
    Tensor& v = bad.values[victim];
    auto x = v.to_f32_vector();
    x[x.size() / 2] += 1e-3f * static_cast<float>(std::sqrt(x.size()));  // ~1e-3 of the L2 norm for unit values
    v = Tensor::from_f32(x, v.shape());
    const auto first = first_disagreement(compare_intermediates(f, bad, float32_limit));
    ASSERT_TRUE(first.has_value()) << victim;
    EXPECT_EQ(first->name, victim);
  }
  Recording missing = r.rec;
  missing.values.erase("blocks.0.ffn.out");
  std::erase(missing.order, "blocks.0.ffn.out");
  const auto first = first_disagreement(compare_intermediates(f, missing, float32_limit));
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->name, "blocks.0.ffn.out");
  EXPECT_EQ(first->problem, "never recorded by the forward");
}

}  // namespace
}  // namespace dattn::testing
