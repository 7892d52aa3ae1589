// The HunyuanVideo-1.5 transformer on CUDA: the golden case in bf16 (the GPU run dtype) and fp32 with
// every intermediate compared, the CPU run of the same inputs, and the ragged batch (key-padding mask)
// on every backend with new device memory poisoned. Skipped without a CUDA device.
#include <cstdio>

#include <gtest/gtest.h>

#include "dattn/core/run_context.h"
#include "models/golden_compare.h"
#include "models/hv15_golden.h"
#include "models/hv15_random_model.h"
#include "support/device_case.h"

namespace dattn::testing {
namespace {

// Every allocation of the CUDA context reads as NaN until written, for the duration of a test.
struct PoisonedDeviceMemory {
  PoisonedDeviceMemory() { current_context(Device::CUDA).set_poison_new_memory(true); }
  ~PoisonedDeviceMemory() { current_context(Device::CUDA).set_poison_new_memory(false); }
};

double rel_l2(const Tensor& a, const Tensor& b) {
  const auto x = a.to_f64_vector(), y = b.to_f64_vector();
  EXPECT_EQ(x.size(), y.size());
  const ErrorStats s = compare(x.data(), y.data(), std::min(x.size(), y.size()));
  EXPECT_EQ(s.nonfinite, 0u);
  return s.rel_l2;
}

void golden_on_cuda(const std::string& backend, DType dtype, double limit_intermediate, double limit_output) {
  DATTN_SKIP_WITHOUT_CUDA();
  const PoisonedDeviceMemory poison;
  SafetensorsFile f(hv15_transformer_case());
  const auto model = HunyuanVideo15Transformer::load(hv15_tiny_transformer_dir(), {Device::CUDA, dtype, hv15_backend(backend)});
  const Hv15Case c = read_hv15_case(f);
  Recording rec;
  const Tensor sample = model.forward(c.hidden_states, c.timestep, c.text, rec.hook());
  ASSERT_EQ(sample.device(), Device::CUDA);
  const auto cs = compare_intermediates(f, rec, [&](const std::string&) { return limit_intermediate; });
  const ErrorStats out = compare_output(sample, f);
  std::printf("[hv15 t2v cuda %s %s] output.sample: %s\n", std::string(dtype_name(dtype)).c_str(), backend.c_str(),
              describe(out).c_str());
  if (const auto bad = first_disagreement(cs)) ADD_FAILURE() << bad->name << ": " << bad->problem << "\n" << report(cs);
  ASSERT_EQ(out.nonfinite, 0u);
  EXPECT_LE(out.rel_l2, limit_output);
  // The CPU in the same dtype, same inputs.
  const auto cpu = HunyuanVideo15Transformer::load(hv15_tiny_transformer_dir(), {Device::CPU, dtype, hv15_backend(backend)});
  const double vs_cpu = rel_l2(sample.to(Device::CPU), cpu.forward(c.hidden_states, c.timestep, c.text));
  std::printf("  vs the CPU: %.3g\n", vs_cpu);
  EXPECT_LE(vs_cpu, limit_output);
}

// fp32 on CUDA runs its GEMMs in TF32 unless told otherwise: 1e-3 covers TF32's 10-bit mantissa.
TEST(Hv15TransformerCuda, GoldenBf16FlashAttn) { golden_on_cuda("FLASH_ATTN", DType::BF16, 3e-2, 2e-2); }
TEST(Hv15TransformerCuda, GoldenBf16TorchSdpa) { golden_on_cuda("TORCH_SDPA", DType::BF16, 3e-2, 2e-2); }
TEST(Hv15TransformerCuda, GoldenFp32TorchSdpa) { golden_on_cuda("TORCH_SDPA", DType::F32, 1e-3, 1e-3); }

class Hv15TransformerCudaBackends : public ::testing::TestWithParam<std::string> {};

TEST_P(Hv15TransformerCudaBackends, RaggedBatchItemsEqualTheirRunsAlone) {
  DATTN_SKIP_WITHOUT_CUDA();
  const PoisonedDeviceMemory poison;
  AttentionSettings s;
  s.config = AttentionConfig::from_json_string(R"({"default":")" + GetParam() + R"("})");
  const auto model = HunyuanVideo15Transformer::load(random_model_dir(), {Device::CUDA, DType::BF16, s});
  const auto run = [&](int only) {
    const Inputs in = make_inputs(only);
    return model.forward(in.hidden, in.timestep, in.text).to(Device::CPU).to(DType::F32);
  };
  const Tensor both = run(-1), a0 = run(0), a1 = run(1);
  const double e0 = rel_l2(both.narrow0(0, 1), a0), e1 = rel_l2(both.narrow0(1, 1), a1);
  const auto cpu = HunyuanVideo15Transformer::load(random_model_dir(), {Device::CPU, DType::BF16, {}});
  const Inputs in = make_inputs(-1);
  const double vs_cpu_flash = rel_l2(both, cpu.forward(in.hidden, in.timestep, in.text).to(DType::F32));
  std::printf("[hv15 d64 cuda bf16 %s] batched vs alone: %.3g, %.3g; vs CPU FLASH_ATTN: %.3g\n", GetParam().c_str(), e0,
              e1, vs_cpu_flash);
  EXPECT_LE(e0, 1e-2);
  EXPECT_LE(e1, 1e-2);
  EXPECT_LE(vs_cpu_flash, GetParam() == "SAGE_ATTN" || GetParam() == "SPARSE_BLOCK" ? 5e-2 : 1e-2);
}

INSTANTIATE_TEST_SUITE_P(All, Hv15TransformerCudaBackends,
                         ::testing::Values("FLASH_ATTN", "TORCH_SDPA", "SAGE_ATTN", "SPARSE_BLOCK"));

}  // namespace
}  // namespace dattn::testing
