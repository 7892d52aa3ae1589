#pragma once
// The job store: one SQLite file under --output-dir, so jobs and the names of their outputs outlive the
// process. Every state change is one statement, and SQLite commits it before the call returns, so a
// kill -9 loses at most the step counter of the running job. Safe to call from any thread.
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "dattn/serve/job.h"

struct sqlite3;

namespace dattn::serve {

class JobStore {
 public:
  explicit JobStore(const std::string& path);  // creates the file and its table when missing
  ~JobStore();
  JobStore(const JobStore&) = delete;
  JobStore& operator=(const JobStore&) = delete;

  void insert(const JobRecord& job);
  std::optional<JobRecord> get(const std::string& id);

  struct Page {
    std::vector<JobRecord> jobs;
    bool has_more = false;
  };
  // OpenAI's pagination: at most `limit` jobs in creation order (newest first unless `ascending`),
  // starting after the job `after` (empty: from the start). nullopt when `after` is no job.
  std::optional<Page> list(int limit, const std::string& after, bool ascending);

  // Each transition applies only from the states named, and says whether it did: a job cancelled while
  // it ran stays cancelled when the worker then finishes it.
  bool start(const std::string& id, int total_steps);  // queued -> in_progress
  void set_progress(const std::string& id, int step);
  bool finish(const std::string& id, JobState to, const std::string& error,
              const nlohmann::json& report = nullptr);  // queued | in_progress -> to
  void remove(const std::string& id);
  // finish() where the caller must go on whatever the store says (the worker's failure path, shutdown):
  // a store error (locked past its busy timeout, disk full) is logged on stderr, not thrown.
  void finish_or_log(const std::string& id, JobState to, const std::string& error) noexcept;

  // After a restart: every job still queued or in progress becomes failed with `reason`; their ids.
  std::vector<std::string> fail_unfinished(const std::string& reason);
  std::map<JobState, std::int64_t> count_by_state();

 private:
  void exec(const std::string& sql);
  sqlite3* db_ = nullptr;
  std::mutex mutex_;
};

}  // namespace dattn::serve
