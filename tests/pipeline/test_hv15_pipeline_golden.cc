// The whole HunyuanVideo-1.5 text-to-video pipeline against diffusers (tests/golden/hv15_tiny/cases/
// pipeline_t2v): float32 on the CPU from the same initial noise, compared stage by stage in pipeline order
// (the text embeddings' valid rows and masks, the latents after every step, the video), so a failure names
// the first stage that disagrees; the same on CUDA (fp32; bf16 against the CPU's bf16 run).
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "dattn/attention/metrics.h"
#include "dattn/core/error.h"
#include "dattn/io/safetensors.h"
#include "dattn/models/hunyuanvideo15/transformer.h"
#include "dattn/pipeline/hunyuanvideo15/hv15_pipeline.h"
#include "dattn/pipeline/pipeline.h"
#include "golden_request.h"
#include "support/device_case.h"
#include "support/golden_dir.h"
#include "support/temp_folder.h"

namespace dattn::testing {
namespace {

const std::string kCase = "/hv15_tiny/cases/pipeline_t2v";
const std::string kPipeline = "/hv15_tiny/pipeline";

struct Stage {
  std::string name;
  std::vector<double> got, want;
};

// The rows of a [1, L, W] golden embedding that its mask marks valid (dattn zeroes the others: they cannot
// reach the video), and the mask itself.
void text_stages(const Conditioning& c, const std::string& prefix, const SafetensorsFile& want, std::vector<Stage>& out) {
  const std::pair<const char*, const char*> pairs[] = {{kHv15TextInput, "embeds"}, {kHv15GlyphInput, "embeds_2"}};
  for (const auto& [input, suffix] : pairs) {
    const std::string name = "text." + prefix + suffix;
    const std::string mask_name = "text." + prefix + (std::string(suffix) == "embeds" ? "embeds_mask" : "embeds_mask_2");
    const std::vector<double> mask = want.read_f64(mask_name);
    const std::vector<double> got = c.at(input).to_f64_vector(), ref = want.read_f64(name);
    const std::size_t width = ref.size() / mask.size();
    Stage s{name + " (valid rows)", {}, {}};
    for (std::size_t i = 0; i < mask.size(); ++i)
      if (mask[i] != 0)
        for (std::size_t k = 0; k < width; ++k) {
          s.got.push_back(got[i * width + k]);
          s.want.push_back(ref[i * width + k]);
        }
    const std::string mask_input = std::string(input) == kHv15TextInput ? kHv15TextMask : kHv15GlyphMask;
    out.push_back({mask_name, c.at(mask_input).to_f64_vector(), mask});
    if (!s.want.empty()) out.push_back(s);
  }
}

std::vector<Stage> run_stages(Pipeline& pipeline, const GenerationRequest& request, const SafetensorsFile& want,
                              GenerationResult& result) {
  std::vector<Stage> stages;
  ProgressObserver observer;
  observer.on_conditioning = [&](const Conditioning& prompt, const Conditioning* negative) {
    text_stages(prompt, "prompt_", want, stages);
    ASSERT_NE(negative, nullptr);
    text_stages(*negative, "negative_prompt_", want, stages);
  };
  observer.on_step = [&](int i, int, double, const Tensor& latents, double) {
    const std::string name = "step" + std::to_string(i) + ".latents";
    stages.push_back({name, latents.to_f64_vector(), want.read_f64(name)});
  };
  result = pipeline.run(request, observer);
  stages.push_back({"output.video", result.frames.to_f64_vector(), want.read_f64("output.video")});
  return stages;
}

// "" when every stage is within `limit` (rel L2) and finite, else the first one that is not.
std::string first_failure(const std::vector<Stage>& stages, double limit, const std::string& label) {
  for (const Stage& s : stages) {
    if (s.got.size() != s.want.size()) return s.name + ": size " + std::to_string(s.got.size()) + " vs " +
                                               std::to_string(s.want.size());
    const ErrorStats e = compare(s.got.data(), s.want.data(), s.want.size());
    std::printf("%s %-44s %s\n", label.c_str(), s.name.c_str(), describe(e).c_str());
    if (e.nonfinite || !(e.rel_l2 <= limit)) return s.name + ": " + describe(e);
  }
  return "";
}

class Hv15PipelineGolden : public ::testing::TestWithParam<GuidanceMode> {};

// The README's ~5e-7 float32-vs-float64 calibration for the video; 1e-5 leaves room for dattn's own
// float32 rounding, a bug is orders of magnitude above it.
TEST_P(Hv15PipelineGolden, EveryStageMatchesDiffusersOnCpuFp32) {
  const SafetensorsFile want(golden_dir() + kCase + ".safetensors");
  PipelineOptions options;
  options.guidance = GetParam();
  const auto pipeline = load_pipeline(golden_dir() + kPipeline, options);
  EXPECT_EQ(pipeline->class_name(), "HunyuanVideo15Pipeline");
  GenerationResult result;
  const auto stages = run_stages(*pipeline, golden_request(kCase, want), want, result);
  EXPECT_EQ(result.frames.shape(), (Shape{9, 64, 96, 3}));
  EXPECT_EQ(first_failure(stages, 1e-5, "cpu"), "");
  std::vector<std::string> names;
  for (const auto& [name, ms] : result.report.stage_ms) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"load text encoders", "text encoding", "load transformer", "denoising",
                                             "load vae", "vae decode"}));
  ASSERT_EQ(result.report.attention.size(), 3u);  // the transformer's two roles, then the text encoder's
  EXPECT_EQ(result.report.attention[0].role, "self");
  EXPECT_EQ(result.report.attention[1].role, "hunyuanvideo15.refiner");
  EXPECT_EQ(result.report.attention[2].role, "text_encoder.self");
}

INSTANTIATE_TEST_SUITE_P(Guidance, Hv15PipelineGolden, ::testing::Values(GuidanceMode::Sequential, GuidanceMode::Batched),
                         [](const auto& info) { return std::string(info.param == GuidanceMode::Batched ? "Batched" : "Sequential"); });

// On CUDA in fp32 against diffusers (TF32 convolutions in the VAE: 1e-3). In bf16 the transformer sees
// the timesteps rounded to bf16 (936 for 937.5, as diffusers' bf16 pipeline passes them), so a bf16 run
// is not the float32 golden run: it is compared with the CPU's bf16 run of the same request instead.
TEST(Hv15PipelineGoldenCuda, Fp32MatchesDiffusersAndBf16MatchesTheCpu) {
  DATTN_SKIP_WITHOUT_CUDA();
  const SafetensorsFile want(golden_dir() + kCase + ".safetensors");
  const GenerationRequest request = golden_request(kCase, want);
  PipelineOptions options;
  options.device = Device::CUDA;
  GenerationResult result;
  const auto fp32 = load_pipeline(golden_dir() + kPipeline, options);
  EXPECT_EQ(first_failure(run_stages(*fp32, request, want, result), 1e-3, "cuda fp32"), "");

  options.dtype = DType::BF16;
  const Tensor gpu = load_pipeline(golden_dir() + kPipeline, options)->run(request).frames;
  options.device = Device::CPU;
  const Tensor cpu = load_pipeline(golden_dir() + kPipeline, options)->run(request).frames;
  const auto g = gpu.to_f64_vector(), c = cpu.to_f64_vector();
  ASSERT_EQ(g.size(), c.size());
  const ErrorStats e = compare(g.data(), c.data(), c.size());
  std::printf("cuda bf16 vs cpu bf16 output.video %s\n", describe(e).c_str());
  EXPECT_EQ(e.nonfinite, 0u);
  EXPECT_LE(e.rel_l2, 3e-2);
}

// A request the tiny pipeline runs in a fraction of a second (64x96, 9 frames).
GenerationRequest small_request(int steps) {
  GenerationRequest r;
  r.prompt = "x";
  r.height = 64;
  r.width = 96;
  r.num_frames = 9;
  r.num_inference_steps = steps;
  return r;
}

// Without --guidance-scale the guider config's scale is used, as diffusers' pipeline uses its guider's:
// an edited copy of the tiny pipeline with 3.5 there runs (and reports) 3.5.
TEST(Hv15Pipeline, TheDefaultGuidanceScaleIsTheGuiderConfigs) {
  TempFolder dir;
  std::filesystem::copy(golden_dir() + kPipeline, dir.path(), std::filesystem::copy_options::recursive);
  const std::string guider = dir.path() + "/guider/guider_config.json";
  nlohmann::json j = nlohmann::json::parse(std::ifstream(guider));
  j["guidance_scale"] = 3.5;
  std::ofstream(guider) << j.dump();
  const auto pipeline = load_pipeline(dir.path(), {});
  EXPECT_EQ(pipeline->default_guidance_scale(), 3.5);
  GenerationRequest r = small_request(1);
  EXPECT_EQ(pipeline->run(r).report.guidance_scale, 3.5);
  r.guidance_scale = 1.0;
  EXPECT_EQ(pipeline->run(r).report.guidance_scale, 1.0);
}

// A guider config without guidance_scale took 6.0; diffusers builds ClassifierFreeGuidance from it, whose
// constructor default is 7.5 (src/diffusers/guiders/classifier_free_guidance.py), and the pipeline's __call__
// takes no guidance_scale: 7.5.
TEST(Hv15Pipeline, AGuiderConfigWithoutAScaleTakesDiffusersDefault) {
  TempFolder dir;
  std::filesystem::copy(golden_dir() + kPipeline, dir.path(), std::filesystem::copy_options::recursive);
  const std::string guider = dir.path() + "/guider/guider_config.json";
  nlohmann::json j = nlohmann::json::parse(std::ifstream(guider));
  j.erase("guidance_scale");
  std::ofstream(guider) << j.dump();
  EXPECT_EQ(load_pipeline(dir.path(), {})->default_guidance_scale(), 7.5);
  j["guidance_scale"] = nullptr;  // null reads as absent, as for every config field dattn reads
  std::ofstream(guider) << j.dump();
  EXPECT_EQ(load_pipeline(dir.path(), {})->default_guidance_scale(), 7.5);
}

// A disabled guider ran no guidance while the report gave its scale (and an explicit --guidance-scale was
// ignored in silence); a guider field of the wrong type was ignored or crashed the command.
TEST(Hv15Pipeline, ADisabledGuiderRunsNoGuidanceUnlessTheRequestAsks) {
  TempFolder dir;
  std::filesystem::copy(golden_dir() + kPipeline, dir.path(), std::filesystem::copy_options::recursive);
  const std::string guider = dir.path() + "/guider/guider_config.json";
  const nlohmann::json original = nlohmann::json::parse(std::ifstream(guider));
  nlohmann::json j = original;
  j["enabled"] = false;
  std::ofstream(guider) << j.dump();
  const auto pipeline = load_pipeline(dir.path(), {});
  EXPECT_EQ(pipeline->default_guidance_scale(), 1.0);
  GenerationRequest r = small_request(1);
  const GenerationResult plain = pipeline->run(r);
  EXPECT_EQ(plain.report.guidance_scale, 1.0);
  r.guidance_scale = 4.0;  // asked for: it guides
  const GenerationResult guided = pipeline->run(r);
  EXPECT_EQ(guided.report.guidance_scale, 4.0);
  const std::vector<double> a = plain.frames.to_f64_vector(), b = guided.frames.to_f64_vector();
  EXPECT_GT(compare(a.data(), b.data(), a.size()).max_abs, 0.0);
  for (const auto& [key, value] : {std::pair<const char*, nlohmann::json>{"enabled", "false"},
                                   {"guidance_scale", -1e9}, {"_class_name", 7},
                                   {"use_original_formulation", 1}}) {
    j = original;
    j[key] = value;
    std::ofstream(guider) << j.dump();
    try {
      (void)load_pipeline(dir.path(), {});
      ADD_FAILURE() << key << " " << value.dump() << " was accepted";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + key + "'"), std::string::npos) << e.what();
    }
  }
}

TEST(Hv15Pipeline, BadRequestsAreRefusedBeforeAnyWork) {
  const auto pipeline = load_pipeline(golden_dir() + kPipeline, {});
  GenerationRequest r = small_request(4);
  r.width = 90;
  try {
    pipeline->check(r);
    ADD_FAILURE() << "a width of 90 was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("--width 90"), std::string::npos) << e.what();
  }
  r.width = 96;
  r.num_frames = 10;
  EXPECT_THROW(pipeline->check(r), UserError);
  r.num_frames = 9;
  r.initial_latents = Tensor::zeros({1, 8, 3, 4, 5}, DType::F32);
  EXPECT_THROW(pipeline->check(r), UserError);
}

}  // namespace
}  // namespace dattn::testing
