// Ulysses sequence parallel for HunyuanVideo-1.5 end to end: `mpirun -np 2 dattn generate
// --ulysses-degree 2` on the tiny golden pipeline (its 2 heads; 64x96 at 9 frames is 3 x 4 x 6 = 72 latent
// tokens) against one process. Each rank runs 36 video tokens through the blocks and the whole text
// stream; the joint attention runs every video token and every text token of one head per rank. The
// bound is float32 rounding, as for Wan (GEMMs over fewer rows, the backend over fewer heads, may sum
// differently); measured here: 0, the frames are identical. Ulysses 2 x CFG 2 on 4 ranks must equal
// Ulysses 2 alone exactly, and batched guidance (two text streams of different valid lengths, so the
// text keys are padded and masked) meets the same bound against one process's batched run.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"
#include "cli/mpirun_runner.h"
#include "dattn/attention/metrics.h"
#include "dattn/parallel/world.h"

namespace dattn::testing {
namespace {

namespace fs = std::filesystem;

std::string work_path(const std::string& name) { return mpirun_work_path("ulysses_hv15_" + name); }

std::string hv15_args(const std::string& output, const std::string& size = "") { return hv15_golden_args(output, size); }
std::vector<double> video(const std::string& path) { return written_video(path); }

// Within float32 rounding of `want`, one process's run of the same request; the measured error is
// printed for the docs.
void expect_close(const std::vector<double>& got, const std::vector<double>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  const ErrorStats e = compare(got.data(), want.data(), want.size());
  std::printf("%s against one process: %s\n", what, describe(e).c_str());
  EXPECT_EQ(e.nonfinite, 0u) << what;
  EXPECT_LE(e.rel_l2, 2e-6) << what << ": " << describe(e);
  EXPECT_LE(e.max_abs, kMultiRankVideoMaxAbs) << what << ": " << describe(e);
}

TEST(CliUlyssesHv15, TwoRanksMatchOneProcessToFloat32Rounding) {
  if (!parallel::built_with_mpi()) GTEST_SKIP() << "this build has no MPI (configure with -DDATTN_MPI=on)";
  const std::string single = work_path("single.safetensors"), u2 = work_path("u2.safetensors"),
                    u2c2 = work_path("u2c2.safetensors"), single_b = work_path("single_b.safetensors"),
                    batched = work_path("u2b.safetensors");
  const CliResult one = run_dattn(hv15_args(single), "-u OMPI_COMM_WORLD_SIZE -u PMI_SIZE");
  ASSERT_EQ(one.status, 0) << one.err;
  const CliResult two = mpirun(2, hv15_args(u2) + " --ulysses-degree 2");
  ASSERT_EQ(two.status, 0) << two.err;
  const std::vector<double> want = video(single), got = video(u2);
  expect_close(got, want, "Ulysses 2");

  const CliResult four = mpirun(4, hv15_args(u2c2) + " --ulysses-degree 2 --cfg-parallel-size 2");
  ASSERT_EQ(four.status, 0) << four.err;
  EXPECT_EQ(video(u2c2), got);  // the CFG split adds no rounding

  const CliResult one_b = run_dattn(hv15_args(single_b) + " --guidance batched", "-u OMPI_COMM_WORLD_SIZE -u PMI_SIZE");
  ASSERT_EQ(one_b.status, 0) << one_b.err;
  const CliResult b = mpirun(2, hv15_args(batched) + " --ulysses-degree 2 --guidance batched");
  ASSERT_EQ(b.status, 0) << b.err;
  expect_close(video(batched), video(single_b), "Ulysses 2, batched guidance");
  for (const std::string& p : {single, u2, u2c2, single_b, batched}) fs::remove(p);
}

// The golden pipeline's configs with 4 heads (of 32 columns, the RoPE axes' sum) and random weights:
// Ulysses 2 then puts 2 heads on each rank (their order inside a rank's slice counts), Ulysses 4 splits
// the 72 tokens over 4 ranks, and tensor parallel 2 x Ulysses 2 runs Ulysses on each tensor-parallel
// rank's 2 heads (one head per backend call, 36 tokens per rank). Measured: Ulysses 2 and 4 identical
// frames; tensor parallel 2 x Ulysses 2 rel L2 7.5e-7, max abs 5.1e-6 (the row-parallel sums' rounding).
TEST(CliUlyssesHv15, FourHeadsOverTwoAndFourRanksMatchOneProcess) {
  if (!parallel::built_with_mpi()) GTEST_SKIP() << "this build has no MPI (configure with -DDATTN_MPI=on)";
  const std::string g = golden_dir() + "/hv15_tiny/pipeline/", config = work_path("transformer.json"),
                    model = work_path("model4");
  {
    std::ifstream in(g + "transformer/config.json");
    nlohmann::json j = nlohmann::json::parse(in);
    ASSERT_EQ(j.at("attention_head_dim"), 32);
    j["num_attention_heads"] = 4;
    std::ofstream(config) << j.dump(2);
  }
  const CliResult made = run_dattn(
      "make-pipeline --transformer-config " + shell_quote(config) + " --vae-config " + shell_quote(g + "vae/config.json") +
      " --text-encoder-config " + shell_quote(g + "text_encoder/config.json") + " --text-encoder-2-config " +
      shell_quote(g + "text_encoder_2/config.json") + " --tokenizer " + shell_quote(g + "tokenizer") +
      " --tokenizer-2 " + shell_quote(g + "tokenizer_2") + " --scheduler-config " +
      shell_quote(g + "scheduler/scheduler_config.json") + " --guider-config " +
      shell_quote(g + "guider/guider_config.json") + " --out " + shell_quote(model));
  ASSERT_EQ(made.status, 0) << made.err;
  const auto args = [&](const std::string& output) {
    return "generate --device cpu --model " + shell_quote(model) +
           " --prompt 'A red neon sign that says \"OPEN 24/7\".' --height 64 --width 96 --num-frames 9"
           " --num-inference-steps 3 --seed 7 --output " + shell_quote(output);
  };
  const std::string single = work_path("single4.safetensors"), u2 = work_path("u2_4.safetensors"),
                    u4 = work_path("u4_4.safetensors"), t2u2 = work_path("t2u2_4.safetensors");
  const CliResult one = run_dattn(args(single), "-u OMPI_COMM_WORLD_SIZE -u PMI_SIZE");
  ASSERT_EQ(one.status, 0) << one.err;
  const CliResult two = mpirun(2, args(u2) + " --ulysses-degree 2");
  ASSERT_EQ(two.status, 0) << two.err;
  const CliResult four = mpirun(4, args(u4) + " --ulysses-degree 4");
  ASSERT_EQ(four.status, 0) << four.err;
  const CliResult both = mpirun(4, args(t2u2) + " --tensor-parallel-size 2 --ulysses-degree 2");
  ASSERT_EQ(both.status, 0) << both.err;
  const std::vector<double> want = video(single);
  expect_close(video(u2), want, "4 heads, Ulysses 2");
  expect_close(video(u4), want, "4 heads, Ulysses 4");
  expect_close(video(t2u2), want, "4 heads, tensor parallel 2 x Ulysses 2");
  for (const std::string& p : {config, single, u2, u4, t2u2}) fs::remove(p);
  fs::remove_all(model);
}

// Each refusal on every rank, before any denoising step, and no output written.
void expect_refused(int ranks, const std::string& args, const std::string& output, const std::string& message) {
  const CliResult r = mpirun(ranks, args);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("dattn: error: " + message), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("step 1/"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(output));
}

TEST(CliUlyssesHv15, RefusesDegreesThatDoNotSplit) {
  if (!parallel::built_with_mpi()) GTEST_SKIP() << "this build has no MPI (configure with -DDATTN_MPI=on)";
  const std::string out = work_path("bad.safetensors");
  expect_refused(4, hv15_args(out) + " --ulysses-degree 4", out,
                 "--ulysses-degree 4: HunyuanVideo15Pipeline's transformer has 2 attention heads, not a multiple of "
                 "4; expected 1 or 2");
  // 16x48 at 1 frame: 1 latent frame x 1 x 3 (the VAE's 16x, 1x1 patches) = 3 tokens, odd.
  expect_refused(2, hv15_args(out, "--height 16 --width 48 --num-frames 1") + " --ulysses-degree 2", out,
                 "--ulysses-degree 2: this request has 3 latent video tokens, not a multiple of 2");
}

}  // namespace
}  // namespace dattn::testing
