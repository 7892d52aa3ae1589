// Starting the ranks of a one-host run through mpirun (see self_start.h).
#include "dattn/parallel/self_start.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "dattn/core/error.h"

namespace dattn::parallel {
namespace {

constexpr const char* kMarker = "DATTN_SELF_STARTED";

bool executable_file(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

// `name` in the folders of PATH, as the shell would find it; "" when none has it.
std::string on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return "";
  const std::string folders = path;
  for (std::size_t start = 0; start <= folders.size();) {
    std::size_t end = folders.find(':', start);
    if (end == std::string::npos) end = folders.size();
    const std::string folder = end > start ? folders.substr(start, end - start) : ".";
    if (executable_file(folder + "/" + name)) return folder + "/" + name;
    start = end + 1;
  }
  return "";
}

}  // namespace

bool self_start_enabled() {
  const char* v = std::getenv("DATTN_SPAWN");
  if (v == nullptr || *v == '\0' || std::strcmp(v, "on") == 0) return true;
  if (std::strcmp(v, "off") == 0) return false;
  throw UserError(std::string("environment variable DATTN_SPAWN='") + v +
                  "': expected on (start the ranks of a one-host run with mpirun) or off");
}

Launcher find_launcher() {
  const char* named = std::getenv("DATTN_MPIRUN");
  if (named == nullptr || *named == '\0') {
    const std::string found = on_path("mpirun");
    return {found, found.empty() ? "no mpirun is on PATH" : ""};
  }
  const std::string name = named;
  const std::string found = name.find('/') != std::string::npos ? (executable_file(name) ? name : "") : on_path(name);
  return {found, found.empty() ? "DATTN_MPIRUN='" + name + "' is not an executable file" +
                                     (name.find('/') != std::string::npos ? "" : " on PATH")
                               : ""};
}

std::vector<std::string> self_start_command(const std::string& launcher, int ranks, const std::string& exe,
                                            const std::vector<std::string>& args, bool as_root) {
  std::vector<std::string> c = {launcher, "-np", std::to_string(ranks), "--bind-to", "none", "--oversubscribe"};
  if (as_root) c.push_back("--allow-run-as-root");
  c.push_back(exe);
  c.insert(c.end(), args.begin(), args.end());
  return c;
}

std::string shell_line(const std::vector<std::string>& command) {
  std::string line;
  for (const std::string& word : command) {
    const bool plain = !word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                               "0123456789_./=:,+-@%") == std::string::npos;
    std::string quoted = "'";
    for (char ch : word) quoted += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    line += (line.empty() ? "" : " ") + (plain ? word : quoted + "'");
  }
  return line;
}

std::string this_executable() {
  std::vector<char> buf(4096);
  const ssize_t n = readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) throw UserError(std::string("cannot read /proc/self/exe to start the ranks: ") + std::strerror(errno));
  return std::string(buf.data(), static_cast<std::size_t>(n));
}

bool started_by_self_start() { return std::getenv(kMarker) != nullptr; }

void exec_self_start(const std::vector<std::string>& command) {
  std::vector<char*> argv;
  for (const std::string& word : command) argv.push_back(const_cast<char*>(word.c_str()));
  argv.push_back(nullptr);
  setenv(kMarker, "1", 1);
  std::fflush(stdout);
  std::fflush(stderr);
  execv(argv[0], argv.data());
  const int error = errno;
  unsetenv(kMarker);
  throw UserError("cannot run the launcher '" + command[0] + "': " + std::strerror(error));
}

}  // namespace dattn::parallel
