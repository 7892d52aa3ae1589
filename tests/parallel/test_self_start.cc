// The pieces of a one-host run's self-start (parallel/self_start.h) in one process: DATTN_SPAWN's values,
// where the launcher is found (DATTN_MPIRUN as a path or a name, mpirun on PATH), the launcher's command
// and its shell form. The runs themselves are tests/cli/test_cli_self_start.cc.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "dattn/core/error.h"
#include "dattn/parallel/self_start.h"

namespace dattn {
namespace {

namespace fs = std::filesystem;

// Sets (or, with nullopt, unsets) an environment variable for one scope, restoring its value after.
class EnvFor {
 public:
  EnvFor(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? setenv(name, value->c_str(), 1) : unsetenv(name);
  }
  ~EnvFor() { old_ ? setenv(name_, old_->c_str(), 1) : unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(SelfStart, DattnSpawnIsOnUnlessOff) {
  {
    EnvFor v("DATTN_SPAWN", std::nullopt);
    EXPECT_TRUE(parallel::self_start_enabled());
  }
  {
    EnvFor v("DATTN_SPAWN", "on");
    EXPECT_TRUE(parallel::self_start_enabled());
  }
  {
    EnvFor v("DATTN_SPAWN", "off");
    EXPECT_FALSE(parallel::self_start_enabled());
  }
  EnvFor v("DATTN_SPAWN", "no");
  EXPECT_THROW(parallel::self_start_enabled(), UserError);
}

TEST(SelfStart, FindsTheLauncherNamedOrOnPath) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("dattn_self_start_" + std::to_string(getpid()));
  fs::create_directories(dir / "empty");
  const fs::path fake = dir / "mpirun";
  std::ofstream(fake) << "#!/bin/sh\n";
  fs::permissions(fake, fs::perms::owner_all);
  {
    EnvFor named("DATTN_MPIRUN", std::nullopt), path("PATH", (dir / "empty").string() + ":" + dir.string());
    EXPECT_EQ(parallel::find_launcher().path, fake.string());
  }
  {
    EnvFor named("DATTN_MPIRUN", std::nullopt), path("PATH", (dir / "empty").string());
    const parallel::Launcher l = parallel::find_launcher();
    EXPECT_EQ(l.path, "");
    EXPECT_EQ(l.missing, "no mpirun is on PATH");
  }
  {
    EnvFor named("DATTN_MPIRUN", fake.string()), path("PATH", "");
    EXPECT_EQ(parallel::find_launcher().path, fake.string());
  }
  {
    EnvFor named("DATTN_MPIRUN", "mpirun"), path("PATH", dir.string());
    EXPECT_EQ(parallel::find_launcher().path, fake.string());
  }
  {
    EnvFor named("DATTN_MPIRUN", (dir / "empty").string()), path("PATH", dir.string());  // a folder
    const parallel::Launcher l = parallel::find_launcher();
    EXPECT_EQ(l.path, "");
    EXPECT_EQ(l.missing, "DATTN_MPIRUN='" + (dir / "empty").string() + "' is not an executable file");
  }
  fs::remove_all(dir);
}

TEST(SelfStart, CommandRunsThisExecutableWithTheSameArguments) {
  const std::vector<std::string> args = {"generate", "--prompt", "A dog's day.", "--cfg-parallel-size", "2"};
  EXPECT_EQ(parallel::self_start_command("/usr/bin/mpirun", 2, "/opt/dattn", args, false),
            (std::vector<std::string>{"/usr/bin/mpirun", "-np", "2", "--bind-to", "none", "--oversubscribe", "/opt/dattn",
                                      "generate", "--prompt", "A dog's day.", "--cfg-parallel-size", "2"}));
  const std::vector<std::string> root = parallel::self_start_command("mpirun", 4, "/opt/dattn", {}, true);
  EXPECT_EQ(root.at(6), "--allow-run-as-root");
  EXPECT_EQ(root.at(7), "/opt/dattn");
  EXPECT_EQ(parallel::shell_line({"mpirun", "-np", "2", "/opt/dattn", "--prompt", "A dog's day.", "", "a=b"}),
            "mpirun -np 2 /opt/dattn --prompt 'A dog'\\''s day.' '' a=b");
  EXPECT_TRUE(fs::exists(parallel::this_executable()));
}

}  // namespace
}  // namespace dattn
