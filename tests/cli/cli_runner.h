#pragma once
// Runs build/dattn as a user would and captures its exit status, standard output and standard error.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <string>

namespace dattn::testing {

struct CliResult {
  int status = -1;
  std::string out, err;
};

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// $DATTN_BINARY when set (binaries built on one machine and run on another), else build/dattn.
inline std::string dattn_binary() {
  if (const char* path = std::getenv("DATTN_BINARY"); path && *path) return path;
  return DATTN_BINARY;
}

// `args` is a shell fragment of already-quoted words; `env` is prefixed as VAR=value assignments;
// `shell_prefix`, when given, runs first in the same shell (limits such as `ulimit -f 1000;` or a
// `trap '' XFSZ;`), and dattn is exec'd under `timeout` so a hang fails the test instead of the run.
inline CliResult run_dattn(const std::string& args, const std::string& env = "", const std::string& shell_prefix = "",
                           int timeout_s = 0) {
  // ctest runs test cases as parallel processes: the pid keeps their capture files apart.
  static int counter = 0;
  const std::string err_path = ::testing::TempDir() + "dattn_cli_err_" + std::to_string(getpid()) + "_" +
                               std::to_string(++counter) + ".txt";
  // env -u keeps the developer's own DIFFUSION_ATTENTION_BACKEND out of the tests.
  std::string cmd = "env -u DIFFUSION_ATTENTION_BACKEND " + env + " " +
                    (timeout_s > 0 ? "timeout " + std::to_string(timeout_s) + " " : std::string()) +
                    shell_quote(dattn_binary()) + " " + args + " 2>" + shell_quote(err_path);
  if (!shell_prefix.empty()) cmd = "sh -c " + shell_quote(shell_prefix + " exec " + cmd);
  CliResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int raw = pclose(p);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  std::ifstream f(err_path);
  std::stringstream ss;
  ss << f.rdbuf();
  r.err = ss.str();
  std::remove(err_path.c_str());
  return r;
}

}  // namespace dattn::testing
