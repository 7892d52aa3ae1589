// The whole Wan text-to-video pipeline against diffusers (tests/golden/wan_tiny/cases/pipeline_t2v_fp32):
// float32 on the CPU from the same initial noise, compared stage by stage in pipeline order (text
// embeddings, the latents after every step, the video), so a failure names the first stage that disagrees.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "dattn/attention/metrics.h"
#include "dattn/io/safetensors.h"
#include "dattn/models/wan/transformer.h"
#include "dattn/pipeline/pipeline.h"
#include "dattn/pipeline/wan/wan_pipeline.h"
#include "golden_request.h"
#include "support/device_case.h"
#include "support/golden_dir.h"

namespace dattn::testing {
namespace {

const std::string kCase = "/wan_tiny/cases/pipeline_t2v_fp32";

// README: ~1e-5 relative L2 for the whole pipeline video in float32 against float64. The latents and
// embeddings are held to the same bound: a bug is orders of magnitude above it.
constexpr double kRelL2 = 1e-5;

struct Stage {
  std::string name;
  std::vector<double> got;
};

// The stages a run produces, in pipeline order, each matched with the golden tensor of the same name.
// The frames handed over during the decode are the result's frames, in the pieces the VAE decodes
// (the first latent frame gives one frame, each later one four).
std::vector<Stage> run_stages(Pipeline& pipeline, const GenerationRequest& request, GenerationResult& result) {
  std::vector<Stage> stages;
  ProgressObserver observer;
  std::vector<std::int64_t> pieces;
  std::vector<double> streamed;
  observer.on_frames = [&](const Tensor& frames) {
    pieces.push_back(frames.dim(0));
    const std::vector<double> v = frames.to_f64_vector();
    streamed.insert(streamed.end(), v.begin(), v.end());
  };
  observer.on_conditioning = [&](const Conditioning& prompt, const Conditioning* negative) {
    stages.push_back({"text.prompt_embeds", prompt.at(kWanTextInput).to_f64_vector()});
    ASSERT_NE(negative, nullptr);
    stages.push_back({"text.negative_prompt_embeds", negative->at(kWanTextInput).to_f64_vector()});
  };
  observer.on_step = [&](int i, int n, double, const Tensor& latents, double) {
    EXPECT_EQ(n, request.num_inference_steps);
    stages.push_back({"step" + std::to_string(i) + ".latents", latents.to_f64_vector()});
  };
  result = pipeline.run(request, observer);
  stages.push_back({"output.video", result.frames.to_f64_vector()});
  const std::int64_t latent_frames = (request.num_frames - 1) / 4 + 1;
  std::vector<std::int64_t> want_pieces(static_cast<std::size_t>(latent_frames), 4);
  want_pieces[0] = 1;
  EXPECT_EQ(pieces, want_pieces);
  EXPECT_EQ(streamed, stages.back().got) << "the frames handed over differ from the result's";
  return stages;
}

void expect_stages_match(const std::vector<Stage>& stages, const SafetensorsFile& want) {
  for (const Stage& s : stages) {
    const std::vector<double> w = want.read_f64(s.name);
    ASSERT_EQ(s.got.size(), w.size()) << s.name;
    const ErrorStats e = compare(s.got.data(), w.data(), w.size());
    std::printf("%-28s %s\n", s.name.c_str(), describe(e).c_str());
    ASSERT_EQ(e.nonfinite, 0u) << "first stage that disagrees: " << s.name;
    ASSERT_LE(e.rel_l2, kRelL2) << "first stage that disagrees: " << s.name << " (" << describe(e) << ")";
  }
}

void expect_golden(GuidanceMode mode) {
  const SafetensorsFile want(golden_dir() + kCase + ".safetensors");
  const WanPipelineInfo info = inspect_wan_pipeline(golden_dir() + "/wan_tiny/pipeline");
  EXPECT_TRUE(info.expand_timesteps);
  const GenerationRequest request = golden_request(kCase, want);
  PipelineOptions options;
  options.guidance = mode;
  const std::unique_ptr<Pipeline> pipeline = load_pipeline(golden_dir() + "/wan_tiny/pipeline", options);
  EXPECT_EQ(pipeline->class_name(), "WanPipeline");

  GenerationResult result;
  const std::vector<Stage> stages = run_stages(*pipeline, request, result);
  EXPECT_EQ(result.frames.shape(), (Shape{9, 64, 96, 3}));
  ASSERT_EQ(stages.size(), 2u + request.num_inference_steps + 1u);
  expect_stages_match(stages, want);
  EXPECT_EQ(result.report.guidance, mode);
  // The stage times are reported in pipeline order.
  std::vector<std::string> names;
  for (const auto& [name, ms] : result.report.stage_ms) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"load text encoder", "text encoding", "load transformer", "denoising",
                                             "load vae", "vae decode"}));
  EXPECT_EQ(result.report.step_ms.size(), static_cast<std::size_t>(request.num_inference_steps));
  ASSERT_EQ(result.report.attention.size(), 2u);
  EXPECT_EQ(result.report.attention[0].role, "self");
  EXPECT_EQ(result.report.attention[1].role, "cross");
}

TEST(WanPipelineGolden, EveryStageMatchesDiffusersOnCpuFp32WithSequentialGuidance) {
  expect_golden(GuidanceMode::Sequential);
}

TEST(WanPipelineGolden, EveryStageMatchesDiffusersOnCpuFp32WithBatchedGuidance) {
  expect_golden(GuidanceMode::Batched);
}

// The whole pipeline on CUDA in fp32 (latents, velocities and the scheduler's history on the device):
// the transformer matches at ~1e-6 in fp32 and the VAE's TF32 convolutions at ~1e-4 relative L2 on a
// video (README), so every stage is held to 1e-3, and the two guidance strategies to each other.
TEST(WanPipelineGoldenCuda, Fp32OnTheDeviceMatchesDiffusers) {
  DATTN_SKIP_WITHOUT_CUDA();
  const SafetensorsFile want(golden_dir() + kCase + ".safetensors");
  const GenerationRequest request = golden_request(kCase, want);
  std::vector<double> video[2];
  for (GuidanceMode mode : {GuidanceMode::Sequential, GuidanceMode::Batched}) {
    PipelineOptions options;
    options.device = Device::CUDA;
    options.guidance = mode;
    const auto pipeline = load_pipeline(golden_dir() + "/wan_tiny/pipeline", options);
    GenerationResult result;
    const std::vector<Stage> stages = run_stages(*pipeline, request, result);
    for (const Stage& s : stages) {
      const std::vector<double> w = want.read_f64(s.name);
      ASSERT_EQ(s.got.size(), w.size()) << s.name;
      const ErrorStats e = compare(s.got.data(), w.data(), w.size());
      std::printf("cuda %-10s %-28s %s\n", std::string(guidance_mode_name(mode)).c_str(), s.name.c_str(),
                  describe(e).c_str());
      ASSERT_EQ(e.nonfinite, 0u) << s.name;
      ASSERT_LE(e.rel_l2, 1e-3) << "first stage that disagrees: " << s.name;
    }
    EXPECT_GT(result.report.stage_memory.at(1).peak_device_bytes, 0);  // the context counted the denoising
    video[mode == GuidanceMode::Batched] = stages.back().got;
  }
  const ErrorStats e = compare(video[1].data(), video[0].data(), video[0].size());
  EXPECT_LE(e.rel_l2, 1e-4) << "batched vs sequential: " << describe(e);
}

}  // namespace
}  // namespace dattn::testing
