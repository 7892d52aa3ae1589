// Loading a component ahead of its stage (PipelineOptions::load_ahead, ComponentSlot::load_ahead): the
// slot's contract on its own, then both golden pipelines run with loads ahead and without, which must give
// the same bytes, the same stage rows and the same errors.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "dattn/core/error.h"
#include "dattn/core/run_context.h"
#include "dattn/io/safetensors.h"
#include "dattn/pipeline/pipeline.h"
#include "golden_request.h"
#include "pipeline/common/component_slot.h"
#include "pipeline/common/load_ahead.h"
#include "support/device_case.h"
#include "support/golden_dir.h"
#include "support/temp_folder.h"

namespace dattn::testing {
namespace {

using Slot = pipeline::ComponentSlot<int>;
using Times = std::vector<std::pair<std::string, double>>;

std::shared_ptr<RunContext> cpu_context() { return RunContext::create(Device::CPU); }

TEST(ComponentSlotLoadAhead, AcquireWaitsForTheLoadAndRecordsBothTimes) {
  std::atomic<int> loads{0};
  Slot slot("part", Residency::PerStage, Device::CPU, [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ++loads;
    return std::make_unique<int>(7);
  });
  slot.load_ahead(cpu_context(), cpu_context());
  slot.load_ahead(cpu_context(), cpu_context());  // already loading: not a second load
  EXPECT_TRUE(slot.loading_ahead());
  Times stage, ahead;
  const std::shared_ptr<int> got = slot.acquire(stage, &ahead);
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, 7);
  EXPECT_EQ(loads.load(), 1);
  EXPECT_FALSE(slot.loading_ahead());
  ASSERT_EQ(stage.size(), 1u);
  EXPECT_EQ(stage[0].first, "load part");
  ASSERT_EQ(ahead.size(), 1u);
  EXPECT_EQ(ahead[0].first, "load part");
  EXPECT_GE(ahead[0].second, 45.0);  // the load's own time, measured on its thread
  // PerStage: the next acquire loads again, in the stage.
  slot.acquire(stage, &ahead);
  EXPECT_EQ(loads.load(), 2);
  EXPECT_EQ(ahead.size(), 1u);
}

TEST(ComponentSlotLoadAhead, PrepareRunsOnTheLoadAheadThreadOnly) {
  std::atomic<int> prepared{0};
  const std::thread::id caller = std::this_thread::get_id();
  std::thread::id prepared_on;
  Slot slot(
      "part", Residency::PerStage, Device::CPU, [] { return std::make_unique<int>(7); },
      [&](int& v) {
        ++prepared;
        prepared_on = std::this_thread::get_id();
        v = 8;  // what it did is what acquire() hands out
      });
  Times stage;
  EXPECT_EQ(*slot.acquire(stage), 7);  // loaded in the stage: not prepared
  EXPECT_EQ(prepared.load(), 0);
  slot.load_ahead(cpu_context(), cpu_context());
  EXPECT_EQ(*slot.acquire(stage), 8);
  EXPECT_EQ(prepared.load(), 1);
  EXPECT_NE(prepared_on, caller);
}

TEST(ComponentSlotLoadAhead, ALoadThatFailedThrowsFromAcquire) {
  Slot slot("part", Residency::PerStage, Device::CPU, []() -> std::unique_ptr<int> {
    throw UserError("weights 'x': truncated");
  });
  slot.load_ahead(cpu_context(), cpu_context());
  Times stage;
  try {
    slot.acquire(stage);
    FAIL() << "expected the load's error";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "weights 'x': truncated");
  }
  EXPECT_TRUE(stage.empty());
}

TEST(ComponentSlotLoadAhead, ALoadNobodyAcquiredIsJoinedAndReleasedWithTheSlot) {
  auto released = std::make_shared<std::atomic<bool>>(false);
  struct Part {
    std::shared_ptr<std::atomic<bool>> flag;
    ~Part() { *flag = true; }
  };
  {
    pipeline::ComponentSlot<Part> slot("part", Residency::PerStage, Device::CPU, [released] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      auto part = std::make_unique<Part>();
      part->flag = released;
      return part;
    });
    slot.load_ahead(cpu_context(), cpu_context());
  }
  EXPECT_TRUE(released->load());
}

TEST(ComponentSlotLoadAhead, AResidentSlotNeverLoadsAgain) {
  std::atomic<int> loads{0};
  Slot slot("part", Residency::Resident, Device::CPU, [&] {
    ++loads;
    return std::make_unique<int>(1);
  });
  Times stage;
  slot.acquire(stage);
  slot.load_ahead(cpu_context(), cpu_context());
  EXPECT_FALSE(slot.loading_ahead());
  slot.acquire(stage);
  EXPECT_EQ(loads.load(), 1);
}

TEST(LoadAheadPolicy, OnlyPerStageSingleProcessRunsAndAutoOnlyOnCuda) {
  PipelineOptions o;
  o.device = Device::CPU;
  EXPECT_FALSE(pipeline::load_ahead_enabled(o));  // Auto on the CPU
  o.load_ahead = LoadAhead::On;
  EXPECT_TRUE(pipeline::load_ahead_enabled(o));
  o.residency = Residency::Resident;
  EXPECT_FALSE(pipeline::load_ahead_enabled(o));
  o.residency = Residency::PerStage;
  o.load_ahead = LoadAhead::Off;
  EXPECT_FALSE(pipeline::load_ahead_enabled(o));
  o.load_ahead = LoadAhead::Auto;
  o.device = Device::CUDA;
  EXPECT_TRUE(pipeline::load_ahead_enabled(o));
}

TEST(LoadAheadPolicy, NothingFitsThatIsLargerThanTheHostsMemory) {
  EXPECT_TRUE(pipeline::fits_now(1024, Device::CPU));
  EXPECT_FALSE(pipeline::fits_now(std::int64_t{1} << 60, Device::CPU));
  const std::vector<pipeline::StageNeed> huge = {{"denoising", false, {{"transformer weights", std::int64_t{1} << 60}}},
                                                 {"vae decode", false, {{"vae weights", 1}}}};
  PipelineOptions o;
  o.load_ahead = LoadAhead::On;
  EXPECT_FALSE(pipeline::transformer_loads_beside_text(o, huge));
  // The transformer's weights are loaded by then: only the rest of denoising counts beside the VAE.
  EXPECT_TRUE(pipeline::vae_loads_beside_denoising(o, huge));
  o.load_ahead = LoadAhead::Off;
  EXPECT_FALSE(pipeline::vae_loads_beside_denoising(o, huge));
}

struct Run {
  GenerationResult result;
  std::vector<std::string> stages;
};

Run run_golden(const std::string& pipeline_dir, const std::string& case_path, LoadAhead load_ahead, Device device) {
  const SafetensorsFile want(golden_dir() + case_path + ".safetensors");
  PipelineOptions options;
  options.device = device;
  options.load_ahead = load_ahead;
  Run run;
  run.result = load_pipeline(pipeline_dir, options)->run(golden_request(case_path, want));
  for (const auto& [name, ms] : run.result.report.stage_ms) run.stages.push_back(name);
  return run;
}

void expect_same_run_with_loads_ahead(const std::string& pipeline_dir, const std::string& case_path, Device device) {
  const Run ahead = run_golden(pipeline_dir, case_path, LoadAhead::On, device);
  const Run plain = run_golden(pipeline_dir, case_path, LoadAhead::Off, device);
  EXPECT_EQ(ahead.result.final_latents.to_f64_vector(), plain.result.final_latents.to_f64_vector());
  EXPECT_EQ(ahead.result.frames.to_f64_vector(), plain.result.frames.to_f64_vector());
  EXPECT_EQ(ahead.stages, plain.stages);
  std::vector<std::string> loaded;
  for (const auto& [name, ms] : ahead.result.report.loaded_ahead_ms) {
    loaded.push_back(name);
    EXPECT_GT(ms, 0.0) << name;
  }
  EXPECT_EQ(loaded, (std::vector<std::string>{"load transformer", "load vae"}));
  EXPECT_TRUE(plain.result.report.loaded_ahead_ms.empty());
}

TEST(PipelineLoadAhead, WanGivesTheSameBytesAndStagesWithLoadsAhead) {
  expect_same_run_with_loads_ahead(golden_dir() + "/wan_tiny/pipeline", "/wan_tiny/cases/pipeline_t2v_fp32",
                                   Device::CPU);
}

TEST(PipelineLoadAhead, Hv15GivesTheSameBytesAndStagesWithLoadsAhead) {
  expect_same_run_with_loads_ahead(golden_dir() + "/hv15_tiny/pipeline", "/hv15_tiny/cases/pipeline_t2v", Device::CPU);
}

TEST(PipelineLoadAheadCuda, WanGivesTheSameBytesAndStagesWithLoadsAhead) {
  DATTN_SKIP_WITHOUT_CUDA();
  expect_same_run_with_loads_ahead(golden_dir() + "/wan_tiny/pipeline", "/wan_tiny/cases/pipeline_t2v_fp32",
                                   Device::CUDA);
}

// A transformer whose weights file is cut short fails the run with the same error whether it loaded
// ahead (on its thread) or in its stage.
TEST(PipelineLoadAhead, ABrokenTransformerFailsTheRunWithTheSameError) {
  TempFolder dir;
  std::filesystem::copy(golden_dir() + "/wan_tiny/pipeline", dir.path(), std::filesystem::copy_options::recursive);
  const std::string weights = dir.path() + "/transformer/diffusion_pytorch_model.safetensors";
  std::filesystem::resize_file(weights, 4096);
  std::string messages[2];
  for (int i = 0; i < 2; ++i) {
    const std::string case_path = "/wan_tiny/cases/pipeline_t2v_fp32";
    try {
      run_golden(dir.path(), case_path, i ? LoadAhead::On : LoadAhead::Off, Device::CPU);
      FAIL() << "a cut weights file ran";
    } catch (const std::exception& e) {
      messages[i] = e.what();
    }
  }
  EXPECT_FALSE(messages[0].empty());
  EXPECT_EQ(messages[1], messages[0]);
}

}  // namespace
}  // namespace dattn::testing
