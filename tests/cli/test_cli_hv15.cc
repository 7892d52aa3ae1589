// `dattn transformer` on a HunyuanVideo-1.5 transformer: the golden case (hv15_tiny/cases/transformer_t2v)
// reproduced from outside, given the pipeline folder as diffusers users name it; a case file without the
// masks is a one-line error naming the missing input; make-checkpoint writes an HV1.5 transformer.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/cli_runner.h"
#include "dattn/attention/metrics.h"
#include "dattn/io/safetensors.h"
#include "dattn/io/safetensors_writer.h"
#include "support/golden_dir.h"

namespace dattn::testing {
namespace {

namespace fs = std::filesystem;

std::string golden(const std::string& rel) { return golden_dir() + "/" + rel; }
const std::string kCase = "hv15_tiny/cases/transformer_t2v.safetensors";

std::string temp_path(const std::string& tag) {
  const fs::path p = fs::path(::testing::TempDir()) / ("dattn_cli_hv15_" + std::to_string(getpid()) + "_" + tag);
  fs::remove_all(p);
  return p.string();
}

TEST(CliHv15Transformer, ReproducesTheGoldenOutputFromThePipelineFolder) {
  const std::string out = temp_path("out.safetensors");
  const CliResult r = run_dattn("transformer --device cpu --model " + shell_quote(golden("hv15_tiny/pipeline")) +
                                " --inputs " + shell_quote(golden(kCase)) + " --output " + shell_quote(out));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("output.sample [1,8,3,4,6] -> "), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("role='hunyuanvideo15.refiner' (role_category='self')"), std::string::npos) << r.err;
  SafetensorsFile got(out), want(golden(kCase));
  const auto g = got.read_f64("output.sample"), w = want.read_f64("output.sample");
  ASSERT_EQ(g.size(), w.size());
  const ErrorStats e = compare(g.data(), w.data(), g.size());
  EXPECT_EQ(e.nonfinite, 0u);
  EXPECT_LE(e.rel_l2, 1e-5);
  fs::remove(out);
}

TEST(CliHv15Transformer, AMissingMaskIsAOneLineErrorNamingIt) {
  const std::string partial = temp_path("partial.safetensors"), out = temp_path("out.safetensors");
  SafetensorsFile src(golden(kCase));
  std::vector<WrittenTensor> ts;
  for (const char* name : {"input.hidden_states", "input.timestep", "input.encoder_hidden_states"}) {
    const auto& info = src.info(name);
    ts.push_back({name, info.dtype, info.shape,
                  std::vector<std::uint8_t>(src.data(name), src.data(name) + (info.end - info.begin))});
  }
  write_safetensors(partial, ts);
  const CliResult r = run_dattn("transformer --device cpu --model " + shell_quote(golden("hv15_tiny/pipeline/transformer")) +
                                " --inputs " + shell_quote(partial) + " --output " + shell_quote(out));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("tensor 'input.encoder_attention_mask' not found; this transformer expects"), std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(fs::exists(out));
  fs::remove(partial);
}

TEST(CliHv15MakeCheckpoint, WritesALoadableHunyuanVideo15Transformer) {
  const std::string dir = temp_path("ckpt"), out = temp_path("ckpt_out.safetensors");
  const CliResult w = run_dattn("make-checkpoint --config " +
                                shell_quote(golden("hv15_tiny/pipeline/transformer/config.json")) + " --out " +
                                shell_quote(dir) + " --dtype bf16 --seed 3");
  ASSERT_EQ(w.status, 0) << w.err;
  EXPECT_NE(w.out.find("HunyuanVideo15Transformer3DModel, 119 tensors"), std::string::npos) << w.out;
  const CliResult r = run_dattn("transformer --device cpu --model " + shell_quote(dir) + " --inputs " +
                                shell_quote(golden(kCase)) + " --output " + shell_quote(out));
  EXPECT_EQ(r.status, 0) << r.err;
  fs::remove_all(dir);
  fs::remove(out);
}

}  // namespace
}  // namespace dattn::testing
