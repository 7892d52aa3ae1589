// `dattn serve` refusing to start, each time with exit status 2 and one line on stderr naming what is wrong:
// an empty --api-key (an unset variable turned authentication off), defaults that every request leaving the
// field out would be refused for, a jobs.sqlite that is no job store, limits out of range.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "serve/serve_process.h"

namespace dattn::testing {
namespace {

// `dattn serve` on the tiny model, a free port and a fresh folder, with `extra` arguments (shell words).
CliResult serve_with(const std::string& tag, const std::string& extra, std::string dir = "") {
  if (dir.empty()) dir = fresh_dir("start_" + tag);
  return run_dattn("serve " + shell_quote(tiny_model()) + " --device cpu --port 0 --output-dir " + shell_quote(dir) +
                       " --video-format " + serve::video_format_name(kVideoFormat) + " " + extra,
                   "", "", 120);
}

std::size_t lines(const std::string& text) { return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')); }

// `loaded`: refused once the model is loaded, after the loader's own lines ("[dattn] INFO Resolved ...");
// the server says nothing before the error either way.
void expect_refused(const CliResult& r, const std::string& part, bool loaded = false) {
  EXPECT_EQ(r.status, 2) << r.err;
  if (!loaded) EXPECT_EQ(lines(r.err), 1u) << "a failed start is one line:\n" << r.err;
  EXPECT_EQ(r.err.find("[dattn serve]"), std::string::npos) << r.err;
  const std::size_t last = r.err.rfind('\n', r.err.size() >= 2 ? r.err.size() - 2 : 0);
  const std::string last_line = r.err.substr(last == std::string::npos ? 0 : last + 1);
  EXPECT_EQ(last_line.rfind("dattn: error: ", 0), 0u) << r.err;
  EXPECT_NE(last_line.find(part), std::string::npos) << r.err;
}

TEST(ServeStart, AnEmptyApiKeyIsRefused) {
  expect_refused(serve_with("key", "--api-key ''"), "--api-key is empty");
  expect_refused(serve_with("key_space", "--api-key 'a b'"), "--api-key holds a space or a control character");
}

TEST(ServeStart, DefaultsARequestWouldBeRefusedForAreRefusedAtStart) {
  // Above a limit: before the port is bound.
  expect_refused(serve_with("default_width", "--default-width 4000"), "--default-width 4000 is above --max-width 1920");
  expect_refused(serve_with("default_steps", "--default-steps 300 --max-steps 200"),
                 "--default-steps 300 is above --max-steps 200");
  // Refused by the model's own checks: once it is loaded, before it is ready.
  expect_refused(serve_with("default_frames", "--default-num-frames 6"),
                 "--default-num-frames does not suit this model (a request leaving the field out gets it): "
                 "--num-frames 6 must be 4k+1",
                 true);
}

TEST(ServeStart, LimitsOutOfRangeNameTheirRange) {
  const CliResult r = serve_with("body", "--max-body-bytes 0");
  expect_refused(r, "--max-body-bytes");
  EXPECT_NE(r.err.find("1 to 1073741824"), std::string::npos) << r.err;  // not 2.2e-308 to 1.8e308 in 309 digits
  EXPECT_LT(r.err.size(), 200u) << r.err;
}

TEST(ServeStart, AJobsFileThatIsNoJobStoreIsRefusedNamingIt) {
  const std::string dir = fresh_dir("start_store");
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/jobs.sqlite";
  {
    std::ofstream out(path, std::ios::binary);
    for (int i = 0; i < 200; ++i) out << "not a database, only some text ";
  }
  expect_refused(serve_with("store", "", dir), "job store '" + path + "': not an SQLite database");
}

}  // namespace
}  // namespace dattn::testing
