// A loaded Pipeline serves many requests and several pipelines live in one process: requests run
// alternately on two pipelines, and several in a row on one, give the same frames as single runs.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "dattn/core/error.h"
#include "dattn/pipeline/pipeline.h"
#include "support/golden_dir.h"

namespace dattn::testing {
namespace {

std::string tiny_dir() { return golden_dir() + "/wan_tiny/pipeline"; }

GenerationRequest request(const std::string& prompt, std::uint64_t seed, std::int64_t height, std::int64_t width,
                          int steps, double guidance) {
  GenerationRequest r;
  r.prompt = prompt;
  r.height = height;
  r.width = width;
  r.num_frames = 5;
  r.num_inference_steps = steps;
  r.seed = seed;
  r.guidance_scale = guidance;
  r.max_sequence_length = 64;  // the tiny encoder's prompts are short; less work per request
  return r;
}

std::vector<float> frames_of(Pipeline& p, const GenerationRequest& r) { return p.run(r).frames.to_f32_vector(); }

// The frames of `r` from a pipeline built for this one request.
std::vector<float> single_run(const PipelineOptions& options, const GenerationRequest& r) {
  const auto p = load_pipeline(tiny_dir(), options);
  return frames_of(*p, r);
}

TEST(PipelineReuse, TwoPipelinesRunAlternatelyAsSingleRuns) {
  PipelineOptions flash;
  flash.attention.config.default_spec = AttentionSpec{"FLASH_ATTN"};
  PipelineOptions sdpa;
  sdpa.attention.config.default_spec = AttentionSpec{"TORCH_SDPA"};
  sdpa.guidance = GuidanceMode::Sequential;
  const auto a = load_pipeline(tiny_dir(), flash);
  const auto b = load_pipeline(tiny_dir(), sdpa);
  ASSERT_EQ(b->attention().at(0).backend, "TORCH_SDPA");
  const GenerationRequest r1 = request("a red fox in the snow", 1, 64, 96, 2, 5.0);
  const GenerationRequest r2 = request("waves on a beach", 2, 32, 64, 2, 3.0);
  // a, b, a, b: neither pipeline's state leaks into the other's or into its own next request.
  const std::vector<float> a1 = frames_of(*a, r1), b1 = frames_of(*b, r1);
  const std::vector<float> a2 = frames_of(*a, r2), b2 = frames_of(*b, r2);
  EXPECT_EQ(a1, single_run(flash, r1));
  EXPECT_EQ(b1, single_run(sdpa, r1));
  EXPECT_EQ(a2, single_run(flash, r2));
  EXPECT_EQ(b2, single_run(sdpa, r2));
  EXPECT_NE(a1, b1);  // different backends round differently: the comparison can fail
}

TEST(PipelineReuse, ResidentPipelineReportsNoLoadsAfterItIsBuilt) {
  PipelineOptions options;
  options.residency = Residency::Resident;
  const auto p = load_pipeline(tiny_dir(), options);
  const GenerationResult r = p->run(request("a cat", 3, 32, 32, 1, 1.0));
  for (const auto& [stage, ms] : r.report.stage_ms) EXPECT_NE(stage.rfind("load ", 0), 0u) << stage;
  EXPECT_EQ(r.report.stage_ms.size(), 3u);  // text encoding, denoising, vae decode
}

TEST(PipelineReuse, CancelledRunStopsBeforeTheNextStep) {
  const auto p = load_pipeline(tiny_dir(), PipelineOptions{});
  int steps = 0;
  ProgressObserver observer;
  observer.on_step = [&](int, int, double, const Tensor&, double) { ++steps; };
  observer.cancelled = [&] { return steps == 1; };
  EXPECT_THROW(p->run(request("a cat", 3, 32, 32, 3, 5.0), observer), RunCancelled);
  EXPECT_EQ(steps, 1);
  // The pipeline runs the next request normally.
  EXPECT_EQ(p->run(request("a cat", 3, 32, 32, 1, 5.0)).report.step_ms.size(), 1u);
}

TEST(PipelineRegistry, UnknownClassListsTheRegisteredOnes) {
  EXPECT_EQ(registered_pipeline_classes(), (std::vector<std::string>{"WanPipeline", "HunyuanVideo15Pipeline"}));
  EXPECT_THROW(load_pipeline("/nonexistent/pipeline", PipelineOptions{}), UserError);
  // A folder whose model_index.json names another class gets the list.
  const std::string dir = ::testing::TempDir() + "/dattn_registry_unknown_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/model_index.json") << R"({"_class_name": "FluxPipeline"})";
  try {
    load_pipeline(dir, PipelineOptions{});
    ADD_FAILURE() << "FluxPipeline was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("'FluxPipeline' is not supported; dattn runs WanPipeline, HunyuanVideo15Pipeline"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove_all(dir);
}

std::string load_error(const std::string& dir) {
  try {
    (void)load_pipeline(dir, PipelineOptions{});
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

// Each of these loaded or failed as dattn's own error: a Wan folder whose scheduler config is of another class
// than model_index.json names (it ran that class, another video), a model_index.json with a syntax error
// (reported as "not a JSON object"), a component folder that is a link loop (internal error).
TEST(PipelineRegistry, AFolderThatContradictsItselfIsAOneLineError) {
  namespace fs = std::filesystem;
  const std::string dir = ::testing::TempDir() + "/dattn_registry_mismatch_" + std::to_string(::getpid());
  fs::remove_all(dir);
  fs::copy(golden_dir() + "/wan_tiny/pipeline", dir, fs::copy_options::recursive);
  ASSERT_EQ(load_error(dir), "");
  const std::string scheduler = dir + "/scheduler/scheduler_config.json";
  fs::copy_file(golden_dir() + "/hv15_tiny/pipeline/scheduler/scheduler_config.json", scheduler,
                fs::copy_options::overwrite_existing);
  EXPECT_NE(load_error(dir).find("a FlowMatchEulerDiscreteScheduler config, but"), std::string::npos) << load_error(dir);
  fs::copy_file(golden_dir() + "/wan_tiny/pipeline/scheduler/scheduler_config.json", scheduler,
                fs::copy_options::overwrite_existing);
  std::string index;
  {
    std::ifstream in(dir + "/model_index.json");
    index.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::ofstream(dir + "/model_index.json") << index << ",,";
  EXPECT_NE(load_error(dir).find("not valid JSON"), std::string::npos) << load_error(dir);
  std::ofstream(dir + "/model_index.json") << index;
  fs::remove_all(dir + "/vae");
  fs::create_directory_symlink("vae", dir + "/vae");
  const std::string loop = load_error(dir);
  EXPECT_NE(loop.find("vae/"), std::string::npos) << loop;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dattn::testing
