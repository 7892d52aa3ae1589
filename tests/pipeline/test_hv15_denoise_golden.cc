// HunyuanVideo-1.5's denoising against the golden pipeline (hv15_tiny/cases/pipeline_t2v, float32 on the
// CPU): the pipeline's text embeddings (text.*) and initial noise, FlowMatchEuler over the pipeline's
// given sigmas, two CFG branches at guidance 6, the shared denoise loop and HunyuanVideo15Transformer as
// its Denoiser: every stepN.latents, sequential and batched guidance.
#include <cstdio>
#include <vector>

#include <gtest/gtest.h>

#include "dattn/attention/metrics.h"
#include "dattn/core/run_context.h"
#include "dattn/io/safetensors.h"
#include "dattn/io/weight_store.h"
#include "dattn/models/hunyuanvideo15/transformer.h"
#include "dattn/pipeline/flow_match_euler_scheduler.h"
#include "dattn/pipeline/guidance.h"
#include "pipeline/common/denoise_loop.h"
#include "support/golden_dir.h"

namespace dattn::testing {
namespace {

Conditioning text_conditioning(const SafetensorsFile& f, const std::string& prefix) {
  const auto read = [&](const std::string& n) { return tensor_from_safetensors(f, "text." + prefix + n, DType::F32); };
  Conditioning c;
  c.tensors[kHv15TextInput] = read("embeds");
  c.tensors[kHv15TextMask] = read("embeds_mask");
  c.tensors[kHv15GlyphInput] = read("embeds_2");
  c.tensors[kHv15GlyphMask] = read("embeds_mask_2");
  return c;
}

class Hv15DenoiseGolden : public ::testing::TestWithParam<GuidanceMode> {};

TEST_P(Hv15DenoiseGolden, EveryStepMatchesThePipeline) {
  const std::string dir = golden_dir() + "/hv15_tiny";
  const SafetensorsFile f(dir + "/cases/pipeline_t2v.safetensors");
  const auto model = HunyuanVideo15Transformer::load(dir + "/pipeline/transformer", {Device::CPU, DType::F32, {}});
  auto scheduler = load_scheduler(dir + "/pipeline/scheduler/scheduler_config.json");
  const int steps = 4;
  std::vector<double> sigmas;
  for (int i = 0; i < steps; ++i) sigmas.push_back(1.0 + i * (-1.0 / steps));
  dynamic_cast<FlowMatchEulerDiscreteScheduler&>(*scheduler).set_sigmas(sigmas);

  pipeline::DenoiseInputs in;
  in.latents = tensor_from_safetensors(f, "input.latents", DType::F32);
  in.conditional = text_conditioning(f, "prompt_");
  in.unconditional = text_conditioning(f, "negative_prompt_");
  in.guidance_scale = 6.0;
  std::vector<Tensor> latents;
  ProgressObserver observer;
  observer.on_step = [&](int, int, double, const Tensor& x, double) { latents.push_back(x.to(Device::CPU).clone()); };
  const auto guidance = make_guidance(GetParam());
  std::vector<double> step_ms;
  pipeline::denoise(model, *scheduler, *guidance, std::move(in), observer, current_context(Device::CPU), step_ms);
  ASSERT_EQ(latents.size(), static_cast<std::size_t>(steps));
  for (int i = 0; i < steps; ++i) {
    const std::string name = "step" + std::to_string(i) + ".latents";
    const auto got = latents[i].to_f64_vector(), ref = f.read_f64(name), ref64 = f.read_f64("fp64." + name);
    const ErrorStats e = compare(got.data(), ref.data(), ref.size());
    const ErrorStats torch32 = compare(ref.data(), ref64.data(), ref.size());
    std::printf("[hv15 denoise %s] %s: %s (diffusers fp32 vs fp64: %.3g)\n",
                std::string(guidance_mode_name(GetParam())).c_str(), name.c_str(), describe(e).c_str(), torch32.rel_l2);
    EXPECT_EQ(e.nonfinite, 0u);
    EXPECT_LE(e.rel_l2, 1e-5) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Guidance, Hv15DenoiseGolden, ::testing::Values(GuidanceMode::Sequential, GuidanceMode::Batched),
                         [](const auto& info) { return std::string(info.param == GuidanceMode::Batched ? "Batched" : "Sequential"); });

}  // namespace
}  // namespace dattn::testing
