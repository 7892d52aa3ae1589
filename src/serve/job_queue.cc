#include "dattn/serve/job_queue.h"

#include <utility>

namespace dattn::serve {

void Job::done() {
  {
    std::lock_guard lock(mutex_);
    done_ = true;
  }
  cv_.notify_all();
}

void Job::wait() {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return done_; });
}

JobQueue::JobQueue(std::size_t max_waiting, std::function<void(Job&)> run)
    : max_waiting_(max_waiting), run_(std::move(run)), worker_([this] { work(); }) {}

JobQueue::~JobQueue() {
  for (const auto& job : stop()) {
    job->state = JobState::Failed;
    job->done();
  }
}

bool JobQueue::push(std::shared_ptr<Job> job) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || waiting_.size() >= max_waiting_) return false;
    waiting_.push_back(std::move(job));
  }
  cv_.notify_all();
  return true;
}

std::shared_ptr<Job> JobQueue::take_waiting(const std::string& id) {
  std::lock_guard lock(mutex_);
  for (auto it = waiting_.begin(); it != waiting_.end(); ++it)
    if ((*it)->id == id) {
      std::shared_ptr<Job> job = *it;
      waiting_.erase(it);
      return job;
    }
  return nullptr;
}

bool JobQueue::cancel_running(const std::string& id) {
  std::lock_guard lock(mutex_);
  if (!running_ || running_->id != id) return false;
  running_->cancel = true;
  return true;
}

std::size_t JobQueue::waiting() const {
  std::lock_guard lock(mutex_);
  return waiting_.size();
}

bool JobQueue::busy() const {
  std::lock_guard lock(mutex_);
  return running_ != nullptr;
}

std::vector<std::shared_ptr<Job>> JobQueue::stop() {
  std::vector<std::shared_ptr<Job>> unstarted;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    if (running_) running_->cancel = true;
    unstarted.assign(waiting_.begin(), waiting_.end());
    waiting_.clear();
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  return unstarted;
}

void JobQueue::work() {
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [&] { return stopping_ || !waiting_.empty(); });
      if (stopping_) return;
      job = waiting_.front();
      waiting_.pop_front();
      running_ = job;
    }
    run_(*job);
    std::lock_guard lock(mutex_);
    running_.reset();
  }
}

}  // namespace dattn::serve
