#pragma once
// The mpirun CLI tests' shared pieces (test_cli_mpirun_*.cc): build/dattn run under mpirun as CI does (as
// root, on 2 cores), the tiny golden Wan and HunyuanVideo-1.5 requests, and the video a run writes.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/cli_runner.h"
#include "dattn/io/safetensors.h"
#include "support/golden_dir.h"

namespace dattn::testing {

// The largest difference a multi-rank video (values in [0, 1]) may have from one process's: float32 rounding
// of other reduction orders. 4 ranks measured 1.16e-5 on the GPU machine's host (AVX-512 BLAS kernels) and
// under 1e-5 on CI's; the rel L2 bound of each test is the tighter check.
constexpr double kMultiRankVideoMaxAbs = 5e-5;

// A file in the test's temporary folder, kept apart from parallel ctest processes by the pid.
inline std::string mpirun_work_path(const std::string& name) {
  return (std::filesystem::path(::testing::TempDir()) / ("dattn_mpirun_" + std::to_string(getpid()) + "_" + name))
      .string();
}

// `mpirun -np ranks dattn args`: its exit status and stderr (stdout is dropped).
inline CliResult mpirun(int ranks, const std::string& args) {
  const std::string err = mpirun_work_path("mpirun.err");
  const std::string cmd = "env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=passive "
                          "timeout 300 " DATTN_MPIEXEC " --oversubscribe --bind-to none -np " + std::to_string(ranks) +
                          " " + shell_quote(dattn_binary()) + " " + args + " >/dev/null 2>" + shell_quote(err);
  CliResult r;
  const int raw = std::system(cmd.c_str());
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  std::ifstream f(err);
  std::stringstream ss;
  ss << f.rdbuf();
  r.err = ss.str();
  std::remove(err.c_str());
  return r;
}

// The tiny golden Wan pipeline's request (2 heads, FFN 128; the golden case's initial noise given), or
// `size` with seeded noise.
inline std::string wan_golden_args(const std::string& output, const std::string& size = "") {
  const std::string g = golden_dir() + "/wan_tiny/";
  const std::string shape = size.empty() ? "--height 64 --width 96 --initial-latents " +
                                               shell_quote(g + "cases/pipeline_t2v_fp32.safetensors")
                                         : size + " --seed 1";
  return "generate --device cpu --model " + shell_quote(g + "pipeline") +
         " --prompt 'A dog running across a field of golden wheat.' --negative-prompt '' " + shape +
         " --num-frames 9 --num-inference-steps 4 --guidance-scale 5 --output " + shell_quote(output);
}

// The tiny golden HunyuanVideo-1.5 pipeline's request (2 heads, FFN 256; the golden case's initial noise
// given), or `size` with seeded noise.
inline std::string hv15_golden_args(const std::string& output, const std::string& size = "") {
  const std::string g = golden_dir() + "/hv15_tiny/";
  const std::string shape = size.empty() ? "--height 64 --width 96 --num-frames 9 --initial-latents " +
                                               shell_quote(g + "cases/pipeline_t2v.safetensors")
                                         : size;
  return "generate --device cpu --model " + shell_quote(g + "pipeline") +
         " --prompt 'A red neon sign that says \"OPEN 24/7\" glowing above a diner door at night.' " + shape +
         " --num-inference-steps 4 --guidance-scale 6.0 --seed 42 --output " + shell_quote(output);
}

// The frames a run wrote (its `video` tensor), as float64.
inline std::vector<double> written_video(const std::string& path) { return SafetensorsFile(path).read_f64("video"); }

}  // namespace dattn::testing
