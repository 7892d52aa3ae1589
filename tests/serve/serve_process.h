#pragma once
// `build/dattn serve` as a child process (the process tests: restarts, signals, several ranks): started
// on the tiny model and an ephemeral port, its stderr in a log file, ready once the log says so.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "cli/cli_runner.h"
#include "serve/serve_harness.h"

namespace dattn::testing {

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class ServeProcess {
 public:
  // `extra`: more arguments; `env`: NAME=value settings for it; `model`: the pipeline served (the tiny Wan
  // pipeline unless given) and `name`, the name it is served under.
  ServeProcess(const std::string& dir, const std::string& tag, const std::vector<std::string>& extra = {},
               const std::vector<std::string>& env = {}, VideoFormat format = kVideoFormat,
               const std::string& model = tiny_model(), const std::string& name = "wan-tiny")
      : log_(dir + "-" + tag + ".log") {
    std::vector<std::string> args = {dattn_binary(), "serve", model, "--device", "cpu", "--port", "0",
                                     "--output-dir", dir, "--max-queue", "4", "--max-steps", "1000",
                                     "--served-model-name", name, "--video-format",
                                     serve::video_format_name(format)};
    args.insert(args.end(), extra.begin(), extra.end());
    pid_ = fork();
    if (pid_ == 0) {
      const int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      unsetenv("DIFFUSION_ATTENTION_BACKEND");
      for (const std::string& setting : env) putenv(strdup(setting.c_str()));
      std::vector<char*> argv;
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    // Ready once the log says so; the port is in its "listening on" line.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    std::smatch m;
    while (std::chrono::steady_clock::now() < deadline) {
      const std::string text = read_text(log_);
      if (text.find("] ready:") != std::string::npos &&
          std::regex_search(text, m, std::regex("listening on http://127\\.0\\.0\\.1:([0-9]+)"))) {
        port_ = std::stoi(m[1]);
        return;
      }
      if (waitpid(pid_, &status_, WNOHANG) == pid_) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "dattn serve did not become ready:\n" << read_text(log_);
  }
  ~ServeProcess() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  int port() const { return port_; }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(60, 0);
    return c;
  }
  // Sends `sig` and waits (at most 30 s) for the exit; the wait status, or -1 when it did not end.
  int signal_and_wait(int sig) {
    kill(pid_, sig);
    return wait_exit(30);
  }
  // Waits (at most `seconds`) for the exit; the wait status, or -1 when it did not end.
  int wait_exit(int seconds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
      if (waitpid(pid_, &status_, WNOHANG) == pid_) {
        exited_ = true;
        return status_;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }
  std::string log() const { return read_text(log_); }

 private:
  std::string log_;
  pid_t pid_ = -1;
  int port_ = 0, status_ = 0;
  bool exited_ = false;
};

}  // namespace dattn::testing
