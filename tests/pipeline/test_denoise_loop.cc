// The shared denoise loop stops at the step whose latents went NaN or Inf (one reduction per step)
// and says which part produced them: the model's prediction or the scheduler's update.
#include <cmath>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "dattn/core/error.h"
#include "dattn/core/run_context.h"
#include "dattn/pipeline/guidance.h"
#include "dattn/pipeline/scheduler.h"
#include "dattn/pipeline/unipc_scheduler.h"
#include "pipeline/common/denoise_loop.h"
#include "support/golden_dir.h"

namespace dattn::testing {
namespace {

// velocity = 0.1 * latents, NaN from call `nan_from` on (0-based).
class FakeDenoiser final : public Denoiser {
 public:
  explicit FakeDenoiser(int nan_from) : nan_from_(nan_from) {}
  Tensor predict(const Tensor& latents, double, const Conditioning&) const override {
    std::vector<float> v = latents.to_f32_vector();
    for (float& x : v) x = calls_ >= nan_from_ ? std::numeric_limits<float>::quiet_NaN() : 0.1f * x;
    ++calls_;
    return Tensor::from_f32(v, latents.shape());
  }
  std::vector<Resolution> attention_resolutions() const override { return {}; }

 private:
  int nan_from_;
  mutable int calls_ = 0;
};

std::unique_ptr<Scheduler> tiny_scheduler(double flow_shift) {
  std::ifstream in(golden_dir() + "/wan_tiny/pipeline/scheduler/scheduler_config.json");
  nlohmann::json config = nlohmann::json::parse(in);
  config["flow_shift"] = flow_shift;
  auto s = scheduler_from_json(config.dump(), "scheduler_config.json");
  s->set_timesteps(3);
  return s;
}

std::string run_error(const Denoiser& model, Scheduler& scheduler) {
  pipeline::DenoiseInputs inputs;
  inputs.latents = Tensor::from_f32(std::vector<float>(24, 0.5f), {1, 2, 1, 3, 4});
  Conditioning c;
  c.tensors["text"] = Tensor::zeros({1, 1}, DType::F32);
  inputs.conditional = c;
  const auto guidance = make_guidance(GuidanceMode::Sequential);
  std::vector<double> step_ms;
  try {
    pipeline::denoise(model, scheduler, *guidance, std::move(inputs), {}, current_context(Device::CPU), step_ms);
  } catch (const NumericError& e) {
    return e.what();
  }
  return "";
}

TEST(DenoiseLoop, FiniteRunsPass) {
  const FakeDenoiser model(1000);
  EXPECT_EQ(run_error(model, *tiny_scheduler(5.0)), "");
}

TEST(DenoiseLoop, ANonFinitePredictionStopsAtItsStepNamingTheModel) {
  const FakeDenoiser model(1);  // the second step's prediction
  const std::string m = run_error(model, *tiny_scheduler(5.0));
  EXPECT_NE(m.find("denoising step 2 of 3"), std::string::npos) << m;
  EXPECT_NE(m.find("24 NaN and 0 Inf of 24 latent values"), std::string::npos) << m;
  EXPECT_NE(m.find("the transformer's prediction was non-finite"), std::string::npos) << m;
}

// The scheduler config refuses such a shift at load (test_schedulers.cc); a scheduler built in code still
// gets the loop's check.
TEST(DenoiseLoop, ANonFiniteScheduleStopsNamingTheSchedulerAndTheFlowShift) {
  const FakeDenoiser model(1000);  // always finite
  EXPECT_THROW(tiny_scheduler(1e9), UserError);
  UniPCConfig config;  // the tiny config's values
  config.flow_shift = 1e9;
  UniPCMultistepScheduler scheduler(config);
  scheduler.set_timesteps(3);
  const std::string m = run_error(model, scheduler);
  EXPECT_NE(m.find("denoising step 1 of 3"), std::string::npos) << m;
  EXPECT_NE(m.find("the scheduler's update made them so"), std::string::npos) << m;
  EXPECT_NE(m.find("flow shift"), std::string::npos) << m;
}

}  // namespace
}  // namespace dattn::testing
