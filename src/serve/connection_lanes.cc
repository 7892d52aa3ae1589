#include "serve/connection_lanes.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>
#include <utility>
#include <vector>

namespace dattn::serve {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kLook(10);      // how often the watched connections are looked at
constexpr std::chrono::milliseconds kArrival(1000);  // a probe's request arrives whole well within this

enum class Seen { Waiting, Health, Other, Gone };

// What has arrived on `sock`, left unread for whoever serves it.
Seen look(int sock) {
  char bytes[8192];
  const ssize_t n = recv(sock, bytes, sizeof bytes, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) return Seen::Gone;
  if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? Seen::Waiting : Seen::Gone;
  const std::string_view text(bytes, static_cast<std::size_t>(n));
  if (text.find("\r\n\r\n") == std::string_view::npos)
    return static_cast<std::size_t>(n) == sizeof bytes ? Seen::Other : Seen::Waiting;
  for (const char* probe : {"GET /health ", "GET /health?", "HEAD /health ", "HEAD /health?"})
    if (text.rfind(probe, 0) == 0) return Seen::Health;
  return Seen::Other;
}

}  // namespace

ConnectionLanes::ConnectionLanes(int workers, Serve serve) : workers_(workers), serve_(std::move(serve)) {}

ConnectionLanes::~ConnectionLanes() { stop(); }

void ConnectionLanes::start() {
  for (int i = 0; i < workers_; ++i) threads_.emplace_back([this] { work(); });
  threads_.emplace_back([this] { watch(); });
}

void ConnectionLanes::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  watch_cv_.notify_all();
  for (std::thread& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

void ConnectionLanes::add(int sock) {
  std::lock_guard lock(mutex_);
  if (stopping_) {
    close(sock);
  } else if (worker_free()) {
    to_workers(sock);
  } else {
    watched_.push_back({sock, Clock::now()});
    watch_cv_.notify_one();
  }
}

void ConnectionLanes::to_workers(int sock) {
  queued_.push_back(sock);
  work_cv_.notify_one();
}

void ConnectionLanes::work() {
  std::unique_lock lock(mutex_);
  while (true) {
    ++idle_;
    work_cv_.wait(lock, [&] { return stopping_ || !queued_.empty(); });
    --idle_;
    if (queued_.empty()) return;  // stopping, and nothing left to serve
    const int sock = queued_.front();
    queued_.pop_front();
    lock.unlock();
    serve_(sock, false);
    lock.lock();
  }
}

void ConnectionLanes::watch() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (watched_.empty()) {
      watch_cv_.wait(lock, [&] { return stopping_ || !watched_.empty(); });
      continue;
    }
    watch_cv_.wait_for(lock, kLook);  // a new connection wakes it sooner
    std::deque<Watched> looking;
    looking.swap(watched_);
    lock.unlock();
    std::vector<Seen> seen;
    for (const Watched& w : looking) seen.push_back(look(w.sock));
    lock.lock();
    std::deque<Watched> still;
    std::vector<int> probes;
    const auto now = Clock::now();
    for (std::size_t i = 0; i < looking.size(); ++i) {
      const Watched& w = looking[i];
      if (seen[i] == Seen::Gone) close(w.sock);
      else if (seen[i] == Seen::Health) probes.push_back(w.sock);
      else if (seen[i] == Seen::Other || worker_free() || now - w.since > kArrival) to_workers(w.sock);
      else still.push_back(w);
    }
    watched_.insert(watched_.begin(), still.begin(), still.end());  // before those added meanwhile
    if (probes.empty()) continue;
    lock.unlock();
    for (const int sock : probes) serve_(sock, true);
    lock.lock();
  }
  for (const Watched& w : watched_) close(w.sock);
  watched_.clear();
}

}  // namespace dattn::serve
