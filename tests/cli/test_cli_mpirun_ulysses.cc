// Ulysses sequence parallel end to end: `mpirun -np 2 dattn generate --ulysses-degree 2` on the tiny
// golden Wan pipeline against one process. The bound is float32 rounding, not equality: each rank's
// GEMMs run on half the token rows and the attention backend on half the heads, and the kernels may
// block and sum those differently (measured: video rel L2 2.8e-7, max abs 8.3e-7 on [0, 1] frames).
// Ulysses 2 x CFG 2 on 4 ranks must then equal Ulysses 2 alone exactly (the CFG split adds no rounding),
// and batched guidance (batch 2 through the token slices and the gather) meets the same bound.
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/cli_runner.h"
#include "cli/mpirun_runner.h"
#include "dattn/attention/metrics.h"
#include "dattn/parallel/world.h"

namespace dattn::testing {
namespace {

namespace fs = std::filesystem;

std::string work_path(const std::string& name) { return mpirun_work_path("ulysses_" + name); }
std::string wan_args(const std::string& output, const std::string& size = "") { return wan_golden_args(output, size); }
std::vector<double> video(const std::string& path) { return written_video(path); }

TEST(CliUlysses, TwoRanksMatchOneProcessToFloat32Rounding) {
  if (!parallel::built_with_mpi()) GTEST_SKIP() << "this build has no MPI (configure with -DDATTN_MPI=on)";
  const std::string single = work_path("single.safetensors"), u2 = work_path("u2.safetensors"),
                    u2c2 = work_path("u2c2.safetensors");
  const CliResult one = run_dattn(wan_args(single), "-u OMPI_COMM_WORLD_SIZE -u PMI_SIZE");
  ASSERT_EQ(one.status, 0) << one.err;
  const CliResult two = mpirun(2, wan_args(u2) + " --ulysses-degree 2");
  ASSERT_EQ(two.status, 0) << two.err;
  const std::vector<double> want = video(single), got = video(u2);
  ASSERT_EQ(got.size(), want.size());
  const ErrorStats e = compare(got.data(), want.data(), want.size());
  EXPECT_EQ(e.nonfinite, 0u);
  EXPECT_LE(e.rel_l2, 2e-6) << describe(e);
  EXPECT_LE(e.max_abs, kMultiRankVideoMaxAbs) << describe(e);

  const CliResult four = mpirun(4, wan_args(u2c2) + " --ulysses-degree 2 --cfg-parallel-size 2");
  ASSERT_EQ(four.status, 0) << four.err;
  EXPECT_EQ(video(u2c2), got);

  // Batched guidance: two batch items per forward, so each rank slices and gathers the tokens of both.
  const std::string batched = work_path("u2b.safetensors");
  const CliResult b = mpirun(2, wan_args(batched) + " --ulysses-degree 2 --guidance batched");
  ASSERT_EQ(b.status, 0) << b.err;
  const std::vector<double> got_b = video(batched);
  ASSERT_EQ(got_b.size(), want.size());
  const ErrorStats eb = compare(got_b.data(), want.data(), want.size());
  EXPECT_LE(eb.rel_l2, 2e-6) << describe(eb);
  EXPECT_LE(eb.max_abs, kMultiRankVideoMaxAbs) << describe(eb);
  for (const std::string& p : {single, u2, u2c2, batched}) fs::remove(p);
}

TEST(CliUlysses, RefusesTokenCountsThatDoNotSplit) {
  if (!parallel::built_with_mpi()) GTEST_SKIP() << "this build has no MPI (configure with -DDATTN_MPI=on)";
  // 32x96 at 9 frames: 3 latent frames x (2/2) x (6/2) = 9 tokens (the VAE's 16x, the 2x2 patches), odd.
  const std::string out = work_path("bad.safetensors");
  const CliResult r = mpirun(2, wan_args(out, "--height 32 --width 96") + " --ulysses-degree 2");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("dattn: error: --ulysses-degree 2: this request has 9 latent video tokens, not a multiple of 2"),
            std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("step 1/"), std::string::npos) << r.err;  // refused before any work
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace dattn::testing
