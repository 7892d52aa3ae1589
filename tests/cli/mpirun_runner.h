#pragma once
// Runs build/dattn under mpirun as CI does (as root, on 2 cores), for the CLI's multi-rank tests.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "cli/cli_runner.h"

namespace dattn::testing {

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

}  // namespace dattn::testing
