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

// The seed's command on the tiny golden pipeline (its initial noise given, since torch's generator is not
// dattn's): the video matches diffusers' run.
std::string generate_args(const std::string& output, const std::string& size = "--height 64 --width 96",
                          const std::string& frames = "--num-frames 9") {
  return "generate --device cpu --model " + shell_quote(golden("hv15_tiny/pipeline")) +
         " --prompt 'A red neon sign that says \"OPEN 24/7\" glowing above a diner door at night.' " + size + " " +
         frames + " --num-inference-steps 4 --guidance-scale 6.0 --seed 42 --output " + shell_quote(output);
}

// The baseline of --validate-against ran the text encoder on its platform default while the run used its
// per_role entry, and the summary listed no text encoder role.
TEST(CliHv15Generate, ValidationKeepsTheTextEncodersBackendAndListsIt) {
  const std::string out = temp_path("validated.safetensors");
  const CliResult r = run_dattn(generate_args(out, "--height 64 --width 96", "--num-frames 5") +
                                " --diffusion-attention-config.per_role.text_encoder.self.backend"
                                " TORCH_SDPA --validate-against FLASH_ATTN --validate-warmup-steps 0");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("role=text_encoder.self backend=TORCH_SDPA"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("'FLASH_ATTN' for role='text_encoder.self'"), std::string::npos) << r.err;
}

TEST(CliHv15Generate, ReproducesTheGoldenPipeline) {
  const std::string out = temp_path("video.safetensors");
  const std::string golden_case = golden("hv15_tiny/cases/pipeline_t2v.safetensors");
  const CliResult r = run_dattn(generate_args(out) + " --initial-latents " + shell_quote(golden_case));
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* s : {"9 frames of 96x64", "role=self backend=FLASH_ATTN", "role=hunyuanvideo15.refiner backend=FLASH_ATTN",
                        "role=text_encoder.self backend=FLASH_ATTN",
                        "load text encoders", "text encoding", "denoising", "vae decode"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << " not in:\n" << r.out;
  EXPECT_NE(r.err.find("role='text_encoder.self'"), std::string::npos) << r.err;
  SafetensorsFile got(out), want(golden_case);
  const auto g = got.read_f64("video"), w = want.read_f64("output.video");
  ASSERT_EQ(g.size(), w.size());
  const ErrorStats e = compare(g.data(), w.data(), w.size());
  EXPECT_EQ(e.nonfinite, 0u);
  EXPECT_LE(e.rel_l2, 1e-5) << describe(e);
  fs::remove(out);
}

void expect_refused(const std::string& args, const std::string& output, const std::string& message) {
  const CliResult r = run_dattn(args);
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(message), std::string::npos) << "stderr: " << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "stderr: " << r.err;  // no work started
  EXPECT_FALSE(fs::exists(output)) << output;
}

TEST(CliHv15Generate, RefusesBadArgumentsBeforeAnyWork) {
  const std::string out = temp_path("bad.safetensors");
  expect_refused(generate_args(out, "--height 60 --width 96"), out, "--height 60 must be a positive multiple of 16");
  expect_refused(generate_args(out, "--height 64 --width 100"), out, "--width 100 must be a positive multiple of 16");
  expect_refused(generate_args(out, "--height 64 --width 96", "--num-frames 8"), out, "--num-frames 8 must be 4k+1");
  expect_refused(generate_args(out) + " --num-inference-steps 0", out, "--num-inference-steps");
  // A per_role key that names no role of the model (a typo) is refused with the closest one.
  expect_refused(generate_args(out) + " --diffusion-attention-config.per_role.hunyuanvideo15.refinr.backend TORCH_SDPA",
                 out, "did you mean 'hunyuanvideo15.refiner'");
}

}  // namespace
}  // namespace dattn::testing
