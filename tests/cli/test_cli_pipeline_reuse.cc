// One Pipeline runs three different requests in a row with the same results as three fresh
// `dattn generate` processes.
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/cli_runner.h"
#include "dattn/io/safetensors.h"
#include "dattn/pipeline/pipeline.h"
#include "support/golden_dir.h"

namespace dattn::testing {
namespace {

struct Case {
  std::string prompt;
  std::uint64_t seed;
  std::int64_t height, width, frames;
  int steps;
  double guidance;
};

TEST(CliPipelineReuse, ThreeRequestsInARowEqualThreeFreshProcesses) {
  const std::string model = golden_dir() + "/wan_tiny/pipeline";
  const std::vector<Case> cases = {{"A dog running across a field of golden wheat.", 0, 64, 96, 9, 2, 5.0},
                                   {"a lighthouse at night", 7, 32, 64, 5, 3, 1.0},
                                   {"", 11, 64, 32, 1, 1, 2.5}};
  PipelineOptions options;
  options.residency = Residency::Resident;
  const auto pipeline = load_pipeline(model, options);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    GenerationRequest r;
    r.prompt = c.prompt;
    r.seed = c.seed;
    r.height = c.height;
    r.width = c.width;
    r.num_frames = c.frames;
    r.num_inference_steps = c.steps;
    r.guidance_scale = c.guidance;
    const std::vector<float> in_process = pipeline->run(r).frames.to_f32_vector();

    const std::string out = ::testing::TempDir() + "dattn_reuse_" + std::to_string(getpid()) + "_" +
                            std::to_string(i) + ".safetensors";
    const CliResult cli = run_dattn(
        "generate --device cpu --model " + shell_quote(model) + " --prompt " + shell_quote(c.prompt) + " --seed " +
        std::to_string(c.seed) + " --height " + std::to_string(c.height) + " --width " + std::to_string(c.width) +
        " --num-frames " + std::to_string(c.frames) + " --num-inference-steps " + std::to_string(c.steps) +
        " --guidance-scale " + std::to_string(c.guidance) + " --output " + shell_quote(out));
    ASSERT_EQ(cli.status, 0) << cli.err;
    const SafetensorsFile file(out);
    const std::vector<double> fresh = file.read_f64("video");
    std::remove(out.c_str());
    ASSERT_EQ(fresh.size(), in_process.size()) << "request " << i;
    EXPECT_EQ(std::vector<double>(in_process.begin(), in_process.end()), fresh) << "request " << i;
  }
}

}  // namespace
}  // namespace dattn::testing
