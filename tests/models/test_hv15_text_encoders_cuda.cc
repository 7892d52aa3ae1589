// HunyuanVideo-1.5's text encoders on CUDA against the float64 golden cases: Qwen2.5-VL in bf16 (the
// run dtype on CUDA) and ByT5 in bf16 and fp32. bf16 limit: 3e-2 relative L2 (bf16 weights are exact,
// activations round at every op: the CPU's bf16 run measures 1.5e-2 at Qwen's final norm, 1.0e-2 at
// the entry prompt_embeds use, test_hv15_text_encoders.cc). fp32: 1e-5.
// Everything skips without a CUDA build or a visible GPU.
#include <gtest/gtest.h>

#include "hv15_text_golden.h"
#include "support/device_case.h"

namespace dattn::testing {
namespace {

namespace ht = hv15_text;
constexpr double kBf16Limit = 3e-2;
constexpr double kFp32Limit = 1e-5;

TEST(Hv15QwenGoldenCuda, HiddenStatesLayerByLayerBf16) {
  DATTN_SKIP_WITHOUT_CUDA();
  ht::qwen_hidden_states(Device::CUDA, DType::BF16, kBf16Limit);
}

TEST(Hv15QwenGoldenCuda, PromptEmbedsBf16) {
  DATTN_SKIP_WITHOUT_CUDA();
  ht::qwen_prompt_embeds(Device::CUDA, DType::BF16, kBf16Limit);
}

TEST(Hv15QwenGoldenCuda, HiddenStatesFloat32) {
  DATTN_SKIP_WITHOUT_CUDA();
  ht::qwen_hidden_states(Device::CUDA, DType::F32, kFp32Limit);
}

TEST(Hv15Byt5GoldenCuda, HiddenStatesAndPromptEmbeds2) {
  DATTN_SKIP_WITHOUT_CUDA();
  ht::byt5_hidden_states(Device::CUDA, DType::BF16, kBf16Limit);
  ht::byt5_prompt_embeds(Device::CUDA, DType::BF16, kBf16Limit);
  ht::byt5_hidden_states(Device::CUDA, DType::F32, kFp32Limit);
  ht::byt5_prompt_embeds(Device::CUDA, DType::F32, kFp32Limit);
}

}  // namespace
}  // namespace dattn::testing
