// One command on one host: `dattn generate --cfg-parallel-size 2` with no mpirun in front starts its 2
// ranks itself (it execs mpirun, parallel/self_start.h). On the tiny golden Wan pipeline their frames are
// byte-identical to one process's sequential guidance (the bound of mpirun_cfg_parallel.sh, whose ranks
// mpirun starts: each rank runs the same batch-1 forwards, combined by the same guidance_combine). Also:
// with no launcher to run, the command is one line naming what is missing and the mpirun command to run
// instead, and nothing is written; the degrees are checked before any rank starts; a DATTN_MPIRUN that
// sets no rank variables is refused by the process it started instead of starting ranks again (a loop).
// DATTN_SPAWN=off (the old refusal of the product) is tests/cli/test_cli_parallel.cc.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "cli/cli_runner.h"
#include "dattn/parallel/world.h"
#include "support/golden_dir.h"

namespace dattn::testing {
namespace {

namespace fs = std::filesystem;

// No launcher's variables and no DATTN_ settings of the developer's shell; OpenMP waits passively so
// that 2 ranks on 2 cores do not spin against each other.
const std::string kAlone = "-u OMPI_COMM_WORLD_SIZE -u PMI_SIZE -u DATTN_MPIRUN -u DATTN_SPAWN -u DATTN_SELF_STARTED "
                           "OMP_WAIT_POLICY=passive";

std::string work_path(const std::string& name) {
  return (fs::path(::testing::TempDir()) / ("dattn_self_start_" + std::to_string(getpid()) + "_" + name)).string();
}

std::string wan_args(const std::string& output, const std::string& extra) {
  const std::string g = golden_dir() + "/wan_tiny/";
  return "generate --device cpu --model " + shell_quote(g + "pipeline") +
         " --prompt 'A dog running across a field of golden wheat.' --negative-prompt '' --height 64 --width 96"
         " --num-frames 9 --num-inference-steps 4 --guidance-scale 5 --initial-latents " +
         shell_quote(g + "cases/pipeline_t2v_fp32.safetensors") + " --output " + shell_quote(output) + " " + extra;
}

std::string bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::size_t lines(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }

// PATH with the configured mpirun's folder first, so that the default lookup finds it.
std::string path_with_mpirun() {
  const fs::path mpirun = DATTN_MPIEXEC;
  return mpirun.has_parent_path() ? "PATH=" + shell_quote(mpirun.parent_path().string()) + ":\"$PATH\"" : "";
}

TEST(CliSelfStart, TwoRanksWithoutMpirunMatchOneProcessByteForByte) {
  if (!parallel::built_with_mpi()) GTEST_SKIP() << "this build has no MPI (configure with -DDATTN_MPI=on)";
  const std::string single = work_path("single.safetensors"), cfg2 = work_path("cfg2.safetensors"),
                    report = work_path("cfg2.json");
  const CliResult one = run_dattn(wan_args(single, "--guidance sequential"), kAlone);
  ASSERT_EQ(one.status, 0) << one.err;
  const CliResult two =
      run_dattn(wan_args(cfg2, "--cfg-parallel-size 2 --report " + shell_quote(report)), kAlone + " " + path_with_mpirun(),
                "", 300);
  ASSERT_EQ(two.status, 0) << two.err;
  const std::string want = bytes(single);
  ASSERT_FALSE(want.empty());
  EXPECT_TRUE(bytes(cfg2) == want) << "the self-started ranks' frames differ from one process's";
  const std::string json = bytes(report);
  EXPECT_NE(json.find("\"ranks\": 2"), std::string::npos) << json;
  EXPECT_NE(json.find("\"transport\": \"mpi\""), std::string::npos) << json;
  // Rank 0 alone prints progress: the last step's line once.
  std::size_t n = 0;
  for (std::size_t at = two.err.find("step 4/4"); at != std::string::npos; at = two.err.find("step 4/4", at + 1)) ++n;
  EXPECT_EQ(n, 1u) << two.err;
  for (const std::string& p : {single, cfg2, report}) fs::remove(p);
}

// The one-line refusal of a run that cannot start its ranks: status 2, nothing on stdout. No `timeout`
// unless asked: env would look for it on the PATH a case replaces.
CliResult refused(const std::string& args, const std::string& env, int timeout_s = 0) {
  const CliResult r = run_dattn(args, kAlone + " " + env, "", timeout_s);
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  return r;
}

TEST(CliSelfStart, WithoutALauncherSaysWhatIsMissingAndTheMpirunCommand) {
  const std::string out = work_path("missing.safetensors");
  const std::string empty = work_path("empty_dir");
  fs::create_directories(empty);
  const std::string exe = fs::canonical(dattn_binary()).string();
  for (const auto& [env, missing] :
       {std::pair{std::string("DATTN_MPIRUN=/nonexistent/mpirun"), std::string("DATTN_MPIRUN='/nonexistent/mpirun' is not an executable file")},
        std::pair{"PATH=" + shell_quote(empty), std::string("no mpirun is on PATH")}}) {
    const CliResult r = refused(wan_args(out, "--cfg-parallel-size 2"), env);
    if (parallel::built_with_mpi()) {
      EXPECT_NE(r.err.find("dattn: error: --cfg-parallel-size 2: dattn starts the 2 ranks with OpenMPI's mpirun, but " +
                           missing + " (install openmpi-bin, or set DATTN_MPIRUN to it); or start them yourself: "
                           "mpirun -np 2 --bind-to none --oversubscribe " + exe + " generate --device cpu --model "),
                std::string::npos) << r.err;
      EXPECT_NE(r.err.find(" --cfg-parallel-size 2\n"), std::string::npos) << r.err;  // the same arguments
    } else {
      EXPECT_NE(r.err.find("this build of dattn has no MPI"), std::string::npos) << r.err;
    }
    EXPECT_FALSE(fs::exists(out));
  }
  fs::remove_all(empty);
}

TEST(CliSelfStart, ChecksTheDegreesBeforeStartingAnyRank) {
  const std::string out = work_path("degrees.safetensors");
  // A launcher that does not exist: reaching it would be a different error.
  const CliResult r = refused(wan_args(out, "--cfg-parallel-size 3"), "DATTN_MPIRUN=/nonexistent/mpirun");
  EXPECT_NE(r.err.find("dattn: error: --cfg-parallel-size 3: expected 1 or 2"), std::string::npos) << r.err;
  const CliResult bad = refused(wan_args(out, "--cfg-parallel-size 2"), "DATTN_SPAWN=maybe");
  EXPECT_NE(bad.err.find("DATTN_SPAWN='maybe': expected on"), std::string::npos) << bad.err;
  EXPECT_FALSE(fs::exists(out));
}

TEST(CliSelfStart, ALauncherWithoutRankVariablesIsRefusedNotLooped) {
  if (!parallel::built_with_mpi()) GTEST_SKIP() << "this build has no MPI (configure with -DDATTN_MPI=on)";
  // Drops the launcher's options and runs the program alone, setting no rank variables.
  const std::string fake = work_path("fake_mpirun.sh"), out = work_path("loop.safetensors");
  const std::string exe = fs::canonical(dattn_binary()).string();
  std::ofstream(fake) << "#!/bin/sh\nwhile [ \"$#\" -gt 0 ] && [ \"$1\" != " << shell_quote(exe)
                      << " ]; do shift; done\nexec \"$@\"\n";
  fs::permissions(fake, fs::perms::owner_all);
  const CliResult r = refused(wan_args(out, "--cfg-parallel-size 2"), "DATTN_MPIRUN=" + shell_quote(fake), 30);
  EXPECT_NE(r.err.find("dattn: error: this process was started by dattn's launcher (DATTN_MPIRUN) without an MPI "
                       "launcher's rank variables"),
            std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
  fs::remove(fake);
}

}  // namespace
}  // namespace dattn::testing
