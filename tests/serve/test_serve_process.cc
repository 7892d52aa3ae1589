// `dattn serve` as a process: kill -9 in the middle of a job and restart (completed jobs and their files
// still served, interrupted ones failed with the reason), SIGTERM (stops accepting, fails the running
// and queued jobs, exits 0), and the README's curl example run as written.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "serve/serve_process.h"

namespace dattn::testing {
namespace {

std::string submit(httplib::Client& c, int steps) {
  const auto r = c.Post("/v1/videos", video_json(steps), "application/json");
  return r && r->status == 200 ? body_of(r)["id"].get<std::string>() : std::string();
}

TEST(ServeProcess, KillNineThenSigtermThenRestart) {
  const std::string dir = fresh_dir("process");
  std::string done, video, crashed, crashed_queued, stopped, stopped_queued;
  {
    ServeProcess a(dir, "a");
    auto c = a.client();
    const auto r = c.Post("/v1/videos/sync", video_json(2), "application/json");
    ASSERT_TRUE(r && r->status == 200);
    done = r->get_header_value("X-Video-Id");
    video = r->body;
    crashed = submit(c, 1000);
    ASSERT_EQ(wait_for(c, crashed, [](const nlohmann::json& j) { return j["step"] >= 1; })["status"], "in_progress");
    crashed_queued = submit(c, 1);
    ASSERT_FALSE(crashed_queued.empty());
    const int status = a.signal_and_wait(SIGKILL);
    ASSERT_TRUE(WIFSIGNALED(status));
  }
  {
    ServeProcess b(dir, "b");
    auto c = b.client();
    // The completed job and its file outlive the crash; the interrupted ones are failed, with the reason.
    EXPECT_EQ(body_of(c.Get("/v1/videos/" + done))["status"], "completed");
    EXPECT_EQ(c.Get("/v1/videos/" + done + "/content")->body, video);
    for (const auto& id : {crashed, crashed_queued}) {
      const nlohmann::json j = body_of(c.Get("/v1/videos/" + id));
      EXPECT_EQ(j["status"], "failed") << j.dump();
      EXPECT_NE(j["error"]["message"].get<std::string>().find("server stopped"), std::string::npos) << j.dump();
    }
    EXPECT_NE(b.log().find("2 job(s) left unfinished"), std::string::npos) << b.log();

    stopped = submit(c, 1000);
    ASSERT_EQ(wait_for(c, stopped, [](const nlohmann::json& j) { return j["step"] >= 1; })["status"], "in_progress");
    stopped_queued = submit(c, 1);
    // A sync request waiting in the queue is answered 503 (it was 500): a shutdown, worth retrying.
    int sync_status = 0;
    std::string sync_body;
    std::thread sync([&] {
      auto sc = b.client();
      if (const auto r = sc.Post("/v1/videos/sync", video_json(1), "application/json")) {
        sync_status = r->status;
        sync_body = r->body;
      }
    });
    const auto queued_by = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (c.Get("/metrics")->body.find("dattn_queue_depth 2") == std::string::npos &&
           std::chrono::steady_clock::now() < queued_by)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const auto start = std::chrono::steady_clock::now();
    const int status = b.signal_and_wait(SIGTERM);
    sync.join();
    EXPECT_EQ(sync_status, 503) << sync_body;
    EXPECT_NE(sync_body.find("shut down (SIGTERM)"), std::string::npos) << sync_body;
    ASSERT_TRUE(WIFEXITED(status)) << b.log();
    EXPECT_EQ(WEXITSTATUS(status), 0) << b.log();
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));  // the 1000-step job was cut
    EXPECT_NE(b.log().find("SIGTERM: stopping"), std::string::npos);
  }
  ServeProcess c(dir, "c");
  // One server per job store; a port in use is refused before any model is loaded.
  const std::string format = std::string(" --video-format ") + serve::video_format_name(kVideoFormat);
  CliResult second = run_dattn("serve " + shell_quote(tiny_model()) + " --device cpu --port 0 --output-dir " +
                               shell_quote(dir) + format, "", "", 60);
  EXPECT_EQ(second.status, 2);
  EXPECT_NE(second.err.find("is in use by another dattn serve"), std::string::npos) << second.err;
  second = run_dattn("serve " + shell_quote(tiny_model()) + " --device cpu --port " + std::to_string(c.port()) +
                     " --output-dir " + shell_quote(dir + "-other") + format, "", "", 60);
  EXPECT_EQ(second.status, 2);
  EXPECT_NE(second.err.find("cannot listen on 127.0.0.1:" + std::to_string(c.port())), std::string::npos) << second.err;
  auto client = c.client();
  for (const auto& id : {stopped, stopped_queued}) {
    const nlohmann::json j = body_of(client.Get("/v1/videos/" + id));
    EXPECT_EQ(j["status"], "failed") << j.dump();
    EXPECT_NE(j["error"]["message"].get<std::string>().find("shut down (SIGTERM)"), std::string::npos) << j.dump();
  }
  EXPECT_EQ(client.Get("/v1/videos/" + done + "/content")->body, video);
  // Only the completed job's video is on disk.
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/videos")) files.push_back(e.path().filename().string());
  EXPECT_EQ(files, std::vector<std::string>{done + serve::video_extension(kVideoFormat)});
}

// A model that fails to load at once (a missing folder) stopped the server right after it bound the port,
// before httplib's listener ran: its stop() did nothing and shutdown waited for the listener forever.
TEST(ServeProcess, AModelThatFailsAtOnceEndsTheServerWithStatusTwo) {
  const std::string format = std::string(" --video-format ") + serve::video_format_name(kVideoFormat);
  for (int i = 0; i < 3; ++i) {  // the race it lost was a matter of milliseconds
    const CliResult r = run_dattn("serve /nonexistent/dattn-model --device cpu --port 0 --output-dir " +
                                      shell_quote(fresh_dir("fails_at_once_" + std::to_string(i))) + format,
                                  "", "", 60);
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find("--model '/nonexistent/dattn-model': no such directory"), std::string::npos) << r.err;
    // One line: nothing said it was listening (or stopped) before the error.
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

// The README's "Serving" section: the curl line after <!-- serve-test: curl --> runs as written, on the
// port this test's server took.
TEST(ServeProcess, ReadmeCurlExampleRunsAsWritten) {
  DATTN_SKIP_WITHOUT_FFMPEG();  // the example writes fox.mp4
  if (std::system("command -v curl >/dev/null 2>&1") != 0) GTEST_SKIP() << "curl is not installed";
  const std::string readme = read_text(std::string(DATTN_GOLDEN_DIR) + "/../../README.md");
  const std::regex block("<!-- serve-test: curl -->\\s*```sh\\n([^`]*)```");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(readme, m, block)) << "README.md has no <!-- serve-test: curl --> block";
  std::string command = m[1];
  ASSERT_NE(command.find("127.0.0.1:8000"), std::string::npos) << command;
  const std::string dir = fresh_dir("curl");
  ServeProcess server(dir, "server");
  command = std::regex_replace(command, std::regex("127\\.0\\.0\\.1:8000"), "127.0.0.1:" + std::to_string(server.port()));
  const std::string work = dir + "-work";
  std::filesystem::create_directories(work);
  const int status = std::system(("cd " + shell_quote(work) + " && sh -e -c " + shell_quote(command)).c_str());
  ASSERT_EQ(status, 0) << command;
  EXPECT_EQ(read_text(work + "/fox.mp4").substr(4, 4), "ftyp");
}

}  // namespace
}  // namespace dattn::testing
