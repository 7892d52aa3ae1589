// What `dattn generate` checks before any work (check_wan_request, inspect_wan_pipeline), the
// latent shape, and dattn's seeded noise.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <vector>

#include <gtest/gtest.h>

#include "dattn/core/error.h"
#include "dattn/pipeline/noise.h"
#include "dattn/pipeline/wan/wan_pipeline.h"
#include "support/golden_dir.h"

namespace dattn::testing {
namespace {

namespace fs = std::filesystem;

WanPipelineInfo tiny() { return inspect_wan_pipeline(golden_dir() + "/wan_tiny/pipeline"); }

GenerationRequest good() {
  GenerationRequest r;
  r.prompt = "a cat";
  r.height = 64;
  r.width = 96;
  r.num_frames = 9;
  r.num_inference_steps = 2;
  return r;
}

void expect_refused(const GenerationRequest& r, const std::string& message) {
  try {
    check_wan_request(tiny(), r);
    ADD_FAILURE() << "accepted; expected: " << message;
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

TEST(WanRequest, TinyPipelineFactors) {
  const WanPipelineInfo info = tiny();
  EXPECT_EQ(info.height_multiple(), 32);  // VAE 16 x patch 2, as Wan2.2 TI2V
  EXPECT_EQ(info.width_multiple(), 32);
  EXPECT_EQ(info.scheduler_class, "UniPCMultistepScheduler");
  EXPECT_EQ(wan_latent_shape(info, good()), (Shape{1, 8, 3, 4, 6}));
  EXPECT_NO_THROW(check_wan_request(info, good()));
}

TEST(WanRequest, RefusesWhatTheModelCannotRun) {
  auto r = good();
  r.height = 60;
  expect_refused(r, "--height 60 must be a positive multiple of 32");
  r = good();
  r.width = 0;
  expect_refused(r, "--width 0 must be a positive multiple of 32");
  r = good();
  r.num_frames = 8;
  expect_refused(r, "--num-frames 8 must be 4k+1");
  r = good();
  r.num_inference_steps = 0;
  expect_refused(r, "--num-inference-steps 0 must be between 1 and 1000");
  r = good();
  r.guidance_scale = NAN;
  expect_refused(r, "--guidance-scale");
  r = good();
  r.flow_shift = -1;
  expect_refused(r, "--flow-shift");
  r = good();
  r.initial_latents = Tensor::zeros({1, 8, 3, 4, 5}, DType::F32);
  expect_refused(r, "initial latents have shape [1,8,3,4,5], expected [1,8,3,4,6]");
}

// The bounds issue 20 added: steps up to the scheduler's num_train_timesteps (1000 here), a flow shift
// in [0.01, 100], finite initial latents.
TEST(WanRequest, RefusesStepsFlowShiftsAndNoiseThatCannotWork) {
  const WanPipelineInfo info = tiny();
  EXPECT_EQ(info.num_train_timesteps, 1000);
  auto r = good();
  r.num_inference_steps = 1000;
  EXPECT_NO_THROW(check_wan_request(info, r));
  r.num_inference_steps = 1001;
  expect_refused(r, "--num-inference-steps 1001 must be between 1 and 1000");
  for (double ok : {0.01, 1.0, 17.0, 100.0}) {
    r = good();
    r.flow_shift = ok;
    EXPECT_NO_THROW(check_wan_request(info, r)) << ok;
  }
  for (double bad : {0.0, 0.009, 100.5, 1e9, double(NAN), double(INFINITY)}) {
    r = good();
    r.flow_shift = bad;
    expect_refused(r, "must be between 0.01 and 100");
  }
  r = good();
  std::vector<float> noise(1 * 8 * 3 * 4 * 6, 0.5f);
  noise[7] = NAN;
  noise[8] = INFINITY;
  r.initial_latents = Tensor::from_f32(noise, {1, 8, 3, 4, 6});
  expect_refused(r, "initial latents hold 1 NaN and 1 Inf of 576 values");
}

TEST(WanRequest, RefusesIncompletePipelineDirectories) {
  EXPECT_THROW(inspect_wan_pipeline("/nonexistent/pipeline"), UserError);
  const fs::path dir = fs::path(::testing::TempDir()) / ("dattn_wan_incomplete_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::copy(golden_dir() + "/wan_tiny/pipeline", dir, fs::copy_options::recursive);
  fs::remove_all(dir / "vae");
  try {
    inspect_wan_pipeline(dir.string());
    ADD_FAILURE() << "accepted a pipeline without vae/";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("'vae/' is missing"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

TEST(PipelineNoise, SeededGaussianIsDeterministicAndStandard) {
  const Tensor a = seeded_gaussian({1, 4, 5, 16, 16}, 7), b = seeded_gaussian({1, 4, 5, 16, 16}, 7);
  const Tensor c = seeded_gaussian({1, 4, 5, 16, 16}, 8);
  EXPECT_EQ(a.to_f64_vector(), b.to_f64_vector());
  EXPECT_NE(a.to_f64_vector(), c.to_f64_vector());
  double sum = 0, sq = 0;
  const auto v = a.to_f64_vector();
  for (double x : v) sum += x, sq += x * x;
  const double mean = sum / v.size(), var = sq / v.size() - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.05);  // 5120 samples: standard error ~0.014
  EXPECT_NEAR(var, 1.0, 0.08);
  // An odd count uses half of the last Box-Muller pair.
  EXPECT_EQ(seeded_gaussian({3}, 7).to_f64_vector(), std::vector<double>(v.begin(), v.begin() + 3));
}

}  // namespace
}  // namespace dattn::testing
