#pragma once
// Which thread serves a new connection. `workers` threads serve connections in arrival order; while none is
// free, one more thread (the health lane) watches the connections waiting for one: a whole GET or HEAD
// /health request is answered there at once, anything else (or what has not arrived whole within a second)
// goes on waiting for a worker. Slow clients holding every worker (each for up to --request-read-timeout)
// so no longer keep a liveness probe from its answer.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace dattn::serve {

class ConnectionLanes {
 public:
  // serve(sock, on_health_lane): serves the connection and closes it.
  using Serve = std::function<void(int sock, bool on_health_lane)>;
  ConnectionLanes(int workers, Serve serve);
  ~ConnectionLanes();  // stop()
  ConnectionLanes(const ConnectionLanes&) = delete;
  ConnectionLanes& operator=(const ConnectionLanes&) = delete;

  void start();
  // Joins every thread: a worker first serves what it was given; connections still watched are closed.
  void stop();
  // A connection just accepted.
  void add(int sock);

 private:
  struct Watched {
    int sock;
    std::chrono::steady_clock::time_point since;
  };
  void work();
  void watch();
  bool worker_free() const { return idle_ > queued_.size(); }  // with mutex_ held
  void to_workers(int sock);                                   // with mutex_ held

  const int workers_;
  const Serve serve_;
  std::mutex mutex_;
  std::condition_variable work_cv_, watch_cv_;
  std::deque<int> queued_;
  std::deque<Watched> watched_;
  std::size_t idle_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace dattn::serve
