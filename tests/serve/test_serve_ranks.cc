// `dattn serve` over several ranks (docs/parallel.md, "dattn serve"), started as a user would, without
// mpirun in front: with --cfg-parallel-size 2 the videos are byte for byte one process's sequential
// guidance, also after a job cancelled while it ran (the ranks stop at the same step and stay paired);
// with --tensor-parallel-size 2 or --ulysses-degree 2 they are one process's to float32 rounding (Wan; and
// HunyuanVideo-1.5 with Ulysses). SIGTERM to rank 0 fails the running job and ends every rank with status 0.
// Degrees that cannot run are refused before a port is taken.
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "dattn/io/safetensors.h"
#include "dattn/parallel/world.h"
#include "serve/serve_process.h"

namespace dattn::testing {
namespace {

// What the ranks' start needs: the configured mpirun, OpenMP waiting passively (ranks share 2 cores), root
// allowed (CI runs as root; the self-start adds --allow-run-as-root itself, the variables cover a user's).
const std::vector<std::string> kRankEnv = {"DATTN_MPIRUN=" DATTN_MPIEXEC, "OMP_WAIT_POLICY=passive",
                                           "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"};

#define DATTN_SKIP_WITHOUT_MPI() \
  if (!parallel::built_with_mpi()) GTEST_SKIP() << "this build has no MPI (-DDATTN_MPI=off or no MPI found)"

// The tiny golden HunyuanVideo-1.5 pipeline (2 heads; video_json's 64x32, 5 frames: 16 latent tokens).
std::string hv15_tiny_model() { return golden_dir() + "/hv15_tiny/pipeline"; }

// One process's video of video_json(2, 7) on `model`, as the server's safetensors.
std::string one_process_video(const std::string& dir, const std::string& model = tiny_model()) {
  const std::string path = dir + "-one-process.safetensors";
  const CliResult g = run_dattn("generate --model " + shell_quote(model) +
                                    " --prompt 'a red fox' --width 64 --height 32 --num-frames 5"
                                    " --num-inference-steps 2 --seed 7 --guidance sequential --device cpu --output " +
                                    shell_quote(path),
                                "", "", 120);
  EXPECT_EQ(g.status, 0) << g.err;
  return read_text(path);
}

std::string sync_video(httplib::Client& c) {
  const auto r = c.Post("/v1/videos/sync", video_json(2, 7), "application/json");
  EXPECT_TRUE(r && r->status == 200) << (r ? r->body.substr(0, 300) : "no answer");
  return r ? r->body : std::string();
}

std::vector<double> frames_of(const std::string& bytes, const std::string& path) {
  std::ofstream(path, std::ios::binary) << bytes;
  return SafetensorsFile(path).read_f64("video");
}

// SIGTERM to rank 0 (its pid is in the log): every rank ends, status 0, the running job failed.
void stop_in_order(ServeProcess& server, httplib::Client& c) {
  const auto r = c.Post("/v1/videos", video_json(1000, 7), "application/json");
  ASSERT_TRUE(r && r->status == 200);
  const std::string running = body_of(r)["id"];
  ASSERT_EQ(wait_for(c, running, [](const nlohmann::json& j) { return j["step"] >= 1; })["status"], "in_progress");
  std::smatch m;
  const std::string log = server.log();
  ASSERT_TRUE(std::regex_search(log, m, std::regex("2 ranks; rank 0 is pid ([0-9]+)"))) << log;
  kill(std::stoi(m[1]), SIGTERM);
  const int status = server.wait_exit(30);
  ASSERT_TRUE(WIFEXITED(status)) << server.log();
  EXPECT_EQ(WEXITSTATUS(status), 0) << server.log();
  EXPECT_NE(server.log().find("job " + running + " failed: the server shut down"), std::string::npos) << server.log();
}

TEST(ServeRanks, CfgParallelServesOneProcessVideosByteForByteAcrossACancel) {
  DATTN_SKIP_WITHOUT_MPI();
  const std::string dir = fresh_dir("ranks_cfg");
  const std::string expected = one_process_video(dir);
  ServeProcess server(dir, "server", {"--cfg-parallel-size", "2"}, kRankEnv, VideoFormat::SAFETENSORS);
  auto c = server.client();
  const nlohmann::json card = body_of(c.Get("/v1/models"))["data"][0];
  EXPECT_EQ(card["parallel"], (nlohmann::json{{"ranks", 2}, {"tensor_parallel_size", 1}, {"ulysses_degree", 1},
                                              {"cfg_parallel_size", 2}}))
      << card.dump();
  EXPECT_TRUE(sync_video(c) == expected) << "the 2-rank server's video differs from one process's";

  // Cancelled while it runs: every rank leaves it at the same step, and the next job runs paired.
  const auto r = c.Post("/v1/videos", video_json(1000, 7), "application/json");
  ASSERT_TRUE(r && r->status == 200);
  const std::string id = body_of(r)["id"];
  ASSERT_EQ(wait_for(c, id, [](const nlohmann::json& j) { return j["step"] >= 1; })["status"], "in_progress");
  ASSERT_TRUE(c.Delete("/v1/videos/" + id));
  EXPECT_EQ(wait_finished(c, id)["status"], "cancelled");
  EXPECT_TRUE(sync_video(c) == expected) << "after a cancel, the 2-rank server's video differs from one process's";
  stop_in_order(server, c);
}

// A 2-rank server of `model` with `flag` 2 against one process: float32 rounding, the bounds of the
// generate tests (test_cli_mpirun_tensor_parallel.cc, test_cli_mpirun_ulysses.cc); then stopped in order.
void expect_one_process_to_rounding(const std::string& flag, const std::string& name,
                                    const std::string& model = tiny_model()) {
  const std::string dir = fresh_dir(name);
  const std::vector<double> expected = frames_of(one_process_video(dir, model), dir + "-expected.safetensors");
  ServeProcess server(dir, "server", {flag, "2"}, kRankEnv, VideoFormat::SAFETENSORS, model, "tiny");
  auto c = server.client();
  const std::vector<double> got = frames_of(sync_video(c), dir + "-got.safetensors");
  ASSERT_EQ(got.size(), expected.size());
  double diff = 0, norm = 0, max_abs = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    diff += (got[i] - expected[i]) * (got[i] - expected[i]);
    norm += expected[i] * expected[i];
    max_abs = std::max(max_abs, std::abs(got[i] - expected[i]));
  }
  EXPECT_LE(std::sqrt(diff / norm), 2e-6) << flag;
  EXPECT_LE(max_abs, 5e-5) << flag;
  stop_in_order(server, c);
}

TEST(ServeRanks, TensorParallelServesOneProcessVideosToFloat32Rounding) {
  DATTN_SKIP_WITHOUT_MPI();
  expect_one_process_to_rounding("--tensor-parallel-size", "ranks_tp");
}

TEST(ServeRanks, UlyssesServesOneProcessVideosToFloat32Rounding) {
  DATTN_SKIP_WITHOUT_MPI();
  expect_one_process_to_rounding("--ulysses-degree", "ranks_ulysses");
}

// The relay carries any family's request: HunyuanVideo-1.5 (two text encoders, its own guidance default).
TEST(ServeRanks, Hv15UlyssesServesOneProcessVideosToFloat32Rounding) {
  DATTN_SKIP_WITHOUT_MPI();
  expect_one_process_to_rounding("--ulysses-degree", "ranks_hv15_ulysses", hv15_tiny_model());
}

TEST(ServeRanks, DegreesThatCannotRunAreRefusedBeforeThePort) {
  const std::string base = "serve " + shell_quote(tiny_model()) + " --device cpu --port 0 --output-dir " +
                           shell_quote(fresh_dir("ranks_refused"));
  const std::string env = "DATTN_MPIRUN=" DATTN_MPIEXEC " OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1";
  CliResult r = run_dattn(base + " --cfg-parallel-size 3", env, "", 60);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("--cfg-parallel-size 3"), std::string::npos) << r.err;
  r = run_dattn(base + " --guidance cfg-parallel", env, "", 60);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("--guidance cfg-parallel needs --cfg-parallel-size 2"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("listening"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace dattn::testing
