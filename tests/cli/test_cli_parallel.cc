// The parallel flags of `dattn generate` and `dattn serve` in one process (no mpirun): each bad value is
// a one-line error naming it and what was expected, before any work (with DATTN_SPAWN=off, the opt-out of
// starting the ranks). The multi-rank runs themselves are tests/cli/mpirun_cfg_parallel.sh (ctest
// parallel_cfg_generate_mpirun) and tests/cli/test_cli_self_start.cc.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "cli/cli_runner.h"
#include "cli/serve_skip.h"
#include "dattn/parallel/world.h"
#include "support/golden_dir.h"

namespace dattn::testing {
namespace {

namespace fs = std::filesystem;

std::string output_path() {
  return (fs::path(::testing::TempDir()) / ("dattn_cli_par_" + std::to_string(getpid()) + ".safetensors")).string();
}

std::string generate_args(const std::string& extra) {
  return "generate --device cpu --model " + shell_quote(golden_dir() + "/wan_tiny/pipeline") +
         " --prompt 'A dog.' --height 64 --width 96 --num-frames 9 --num-inference-steps 2 --output " +
         shell_quote(output_path()) + " " + extra;
}

void expect_refused(const std::string& args, const std::string& message) {
  // env -u: a developer's shell inside an mpirun allocation must not make this a multi-rank run.
  // DATTN_SPAWN=off: a process alone refuses a degree product above 1 instead of starting the ranks
  // itself (which tests/cli/test_cli_self_start.cc runs).
  const CliResult r = run_dattn(args, "-u OMPI_COMM_WORLD_SIZE -u PMI_SIZE DATTN_SPAWN=off");
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find(message), std::string::npos) << "stderr: " << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "stderr: " << r.err;
  EXPECT_FALSE(fs::exists(output_path()));
}

TEST(CliParallel, GenerateRefusesDegreesThatOneProcessCannotRun) {
  expect_refused(generate_args("--cfg-parallel-size 2"),
                 std::string("--cfg-parallel-size 2 = 2 ranks, but this process runs alone") +
                     (parallel::built_with_mpi() ? ": start 2 ranks with mpirun -np 2" : " and this build of dattn has no MPI"));
  expect_refused(generate_args("--cfg-parallel-size 3"), "--cfg-parallel-size 3: expected 1 or 2");
  expect_refused(generate_args("--ulysses-degree 0"), "--ulysses-degree 0: expected a whole number >= 1");
  expect_refused(generate_args("--tensor-parallel-size 641 --ulysses-degree 6700417"),
                 "--ulysses-degree 6700417: expected at most 1024");
  expect_refused(generate_args("--tensor-parallel-size 2"), "--tensor-parallel-size 2 x --ulysses-degree 1");
  expect_refused(generate_args("--guidance cfg-parallel"),
                 "guidance 'cfg-parallel' runs the two branches on a CFG group of 2 ranks");
  expect_refused(generate_args("--guidance parallel"), "--guidance 'parallel': expected sequential, batched or cfg-parallel");
}

// The server takes the same flags with the same checks (its multi-rank runs: tests/serve/test_serve_ranks.cc).
TEST(CliParallel, ServeRefusesDegreesThatOneProcessCannotRun) {
  DATTN_SKIP_WITHOUT_SERVE();  // a build without the server has a stand-in that refuses every start
  const std::string serve = "serve --device cpu " + shell_quote(golden_dir() + "/wan_tiny/pipeline") + " --port 0 ";
  expect_refused(serve + "--cfg-parallel-size 2",
                 std::string("--cfg-parallel-size 2 = 2 ranks, but this process runs alone") +
                     (parallel::built_with_mpi() ? ": start 2 ranks with mpirun -np 2" : " and this build of dattn has no MPI"));
  expect_refused(serve + "--ulysses-degree 0", "--ulysses-degree 0: expected a whole number >= 1");
  expect_refused(serve + "--guidance cfg-parallel", "--guidance cfg-parallel needs --cfg-parallel-size 2");
}

}  // namespace
}  // namespace dattn::testing
