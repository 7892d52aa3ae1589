#pragma once
// The FIFO of jobs and the one worker thread that runs them: one generation at a time on the device,
// in arrival order. The queue is bounded (jobs waiting, the running one not counted) so a burst is
// refused with 429 instead of growing without end.
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dattn/pipeline/pipeline.h"
#include "dattn/serve/job.h"

namespace dattn::serve {

enum class JobKind { Video, Image };

// A job in memory while it waits or runs; the HTTP thread that queued it may wait for its end.
struct Job {
  std::string id;
  JobKind kind = JobKind::Video;
  bool persisted = true;  // kept in the job store (videos); images live only for their request
  GenerationRequest request;
  int fps = 16;      // videos
  int count = 1;     // images: how many, seeds seed, seed+1, ...
  std::atomic<bool> cancel{false};

  // Set by the runner before done().
  JobState state = JobState::Queued;
  std::string error;
  GenerationReport report;
  std::vector<std::string> images_png;  // images: the PNG bytes

  void done();
  void wait();

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
};

class JobQueue {
 public:
  // `run` takes a job to its end (state set, done() called) and does not throw.
  JobQueue(std::size_t max_waiting, std::function<void(Job&)> run);
  ~JobQueue();
  JobQueue(const JobQueue&) = delete;
  JobQueue& operator=(const JobQueue&) = delete;

  // False when `max_waiting` jobs already wait, or the queue was stopped.
  bool push(std::shared_ptr<Job> job);
  // Removes a job that has not started (null when `id` is not waiting).
  std::shared_ptr<Job> take_waiting(const std::string& id);
  // Asks the running job `id` to stop at its next step; false when it is not the running one.
  bool cancel_running(const std::string& id);
  std::size_t waiting() const;
  bool busy() const;  // a job runs
  std::size_t max_waiting() const { return max_waiting_; }

  // Refuses new jobs, cancels the running one at its next step, waits for the worker to end, and
  // returns the jobs that never started (still to be finished by the caller).
  std::vector<std::shared_ptr<Job>> stop();

 private:
  void work();

  const std::size_t max_waiting_;
  std::function<void(Job&)> run_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> waiting_;
  std::shared_ptr<Job> running_;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace dattn::serve
