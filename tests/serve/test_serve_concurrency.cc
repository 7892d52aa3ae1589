// 20 clients at once against a queue of 4: submitting (queued and sync), polling and cancelling. Every
// accepted job ends in the state its client's actions call for, the queue never holds more than 4,
// refusals are 429, and the output folder holds exactly the completed jobs' videos.
#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "serve/serve_harness.h"

namespace dattn::testing {
namespace {

struct Outcome {
  bool cancelled_by_client = false;
  bool deleted = false;  // DELETE came after the end: the job and its file were removed
  std::string status;
};

int queue_depth(const std::string& metrics) {
  const std::string key = "\ndattn_queue_depth ";
  const auto at = metrics.find(key);
  return at == std::string::npos ? -1 : std::stoi(metrics.substr(at + key.size()));
}

TEST(ServeConcurrency, TwentyClientsSubmitPollAndCancelWithAQueueOfFour) {
  const std::string dir = fresh_dir("concurrency");
  auto options = tiny_options(dir);
  options.max_queue = 4;
  RunningServer s(options);
  std::mutex mutex;
  std::map<std::string, Outcome> outcomes;
  std::vector<std::string> problems;
  std::atomic<int> refused{0}, synced{0};
  std::atomic<bool> clients_done{false};
  std::atomic<int> deepest{0};
  const auto problem = [&](const std::string& what) {
    std::lock_guard lock(mutex);
    problems.push_back(what);
  };

  // One watcher reads the queue depth while the clients work.
  std::thread watcher([&] {
    auto c = s.client();
    while (!clients_done) {
      const auto r = c.Get("/metrics");
      if (r) deepest = std::max(deepest.load(), queue_depth(r->body));
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  std::vector<std::thread> clients;
  for (int t = 0; t < 20; ++t)
    clients.emplace_back([&, t] {
      auto c = s.client();
      for (int k = 0; k < 2; ++k) {
        const int steps = 1 + (t + k) % 3;
        if (t % 5 == 4) {  // every fifth client waits for its video in the answer
          const auto r = c.Post("/v1/videos/sync", video_json(steps, t), "application/json");
          if (!r) problem("sync: no answer: " + httplib::to_string(r.error()));
          else if (r->status == 429) ++refused;
          else if (r->status != 200 || !is_harness_video(r->body)) problem("sync: " + r->body.substr(0, 200));
          else ++synced;
          continue;
        }
        const auto r = c.Post("/v1/videos", video_json(steps, t * 10 + k), "application/json");
        if (!r) {
          problem("submit: no answer: " + httplib::to_string(r.error()));
          continue;
        }
        if (r->status == 429) {
          ++refused;
          if (body_of(r)["error"]["code"] != "queue_full") problem("429 without queue_full: " + r->body);
          continue;
        }
        const nlohmann::json job = body_of(r);
        if (r->status != 200 || job["status"] != "queued") {
          problem("submit: " + r->body);
          continue;
        }
        const std::string id = job["id"];
        Outcome o;
        if ((t + k) % 3 == 0) {  // cancel: queued, running or (too late) finished
          o.cancelled_by_client = true;
          const nlohmann::json d = body_of(c.Delete("/v1/videos/" + id));
          o.deleted = d.value("deleted", false);
          if (!o.deleted && d.value("status", "") != "cancelled") problem("cancel: " + d.dump());
        }
        o.status = o.deleted ? "deleted" : wait_finished(c, id).value("status", "none");
        std::lock_guard lock(mutex);
        outcomes[id] = o;
      }
    });
  for (auto& c : clients) c.join();
  clients_done = true;
  watcher.join();

  for (const auto& p : problems) ADD_FAILURE() << p;
  EXPECT_GT(refused.load(), 0) << "20 clients against a queue of 4 were never refused";
  EXPECT_LE(deepest.load(), 4);
  EXPECT_GE(deepest.load(), 1);
  std::set<std::string> completed;
  auto c = s.client();
  for (const auto& [id, o] : outcomes) {
    if (o.deleted) {
      EXPECT_EQ(c.Get("/v1/videos/" + id)->status, 404) << id;
      continue;
    }
    EXPECT_EQ(o.status, o.cancelled_by_client ? "cancelled" : "completed") << id;
    if (o.status == "completed") completed.insert(id + serve::video_extension(kVideoFormat));
  }
  // Synced jobs are kept too; every file under videos/ is a completed job's, and no temporary is left.
  std::set<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/videos")) files.insert(e.path().filename().string());
  for (const auto& f : completed) EXPECT_TRUE(files.count(f)) << f;
  EXPECT_EQ(files.size(), completed.size() + static_cast<std::size_t>(synced.load()));
  const nlohmann::json list = body_of(c.Get("/v1/videos?limit=100"));
  for (const auto& j : list["data"]) EXPECT_TRUE(j["status"] == "completed" || j["status"] == "cancelled") << j.dump();
  EXPECT_TRUE(std::filesystem::is_empty(dir + "/images"));
  EXPECT_EQ(c.Get("/health")->status, 200);
}

}  // namespace
}  // namespace dattn::testing
