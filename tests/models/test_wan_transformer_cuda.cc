// The Wan transformer on CUDA against diffusers' golden cases: bf16 (the GPU run dtype) with each
// attention backend the CUDA build offers, every intermediate within bf16 tolerance and the error
// reported; fp32 on CUDA must match like the CPU does. Skipped without a CUDA device.
#include <cstdio>

#include <gtest/gtest.h>

#include "dattn/attention/registry.h"
#include "models/wan_golden.h"
#include "support/device_case.h"

namespace dattn::testing {
namespace {

AttentionSettings only_backend(const std::string& backend) {
  AttentionSettings s;
  s.config = AttentionConfig::from_json_string(R"({"default":")" + backend + R"("})");
  return s;
}

void run_cuda_case(const std::string& backend, DType dtype, double limit_intermediate, double limit_output) {
  if (const std::string why = test::cuda_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  for (const char* case_name : {"t2v_scalar_t", "ti2v_token_t"}) {
    SafetensorsFile f(wan_case_path(case_name));
    const WanTransformer model =
        WanTransformer::load(wan_tiny_transformer_dir(), wan_run_options(Device::CUDA, dtype, only_backend(backend)));
    const WanCase c = read_wan_case(f);
    Recording rec;
    const Tensor sample = model.forward(c.hidden_states, c.timestep, c.encoder_hidden_states, rec.hook());
    ASSERT_EQ(sample.device(), Device::CUDA);
    const auto cs = compare_intermediates(f, rec, [&](const std::string& n) {
      return dtype == DType::F32 ? float32_limit(n) : limit_intermediate;
    });
    const ErrorStats out = compare_output(sample, f);
    std::printf("[wan %s cuda %s %s] output.sample: %s\n", case_name, std::string(dtype_name(dtype)).c_str(),
                backend.c_str(), describe(out).c_str());
    if (const auto bad = first_disagreement(cs))
      ADD_FAILURE() << case_name << " " << backend << ": " << bad->name << ": " << bad->problem << "\n" << report(cs);
    ASSERT_EQ(out.nonfinite, 0u);
    EXPECT_LE(out.rel_l2, limit_output) << case_name << " " << backend;
  }
}

TEST(WanGoldenCuda, Bf16FlashAttn) { run_cuda_case("FLASH_ATTN", DType::BF16, 3e-2, 2e-2); }
TEST(WanGoldenCuda, Bf16TorchSdpa) { run_cuda_case("TORCH_SDPA", DType::BF16, 3e-2, 2e-2); }
TEST(WanGoldenCuda, Fp32TorchSdpa) { run_cuda_case("TORCH_SDPA", DType::F32, 0, 1e-5); }

}  // namespace
}  // namespace dattn::testing
