#include "serve/http_server.h"

#include <sys/socket.h>
#include <unistd.h>

#include <functional>

#include "serve/deadline_stream.h"

namespace dattn::serve {
namespace {

using std::chrono::milliseconds;

// A probe on the health lane has arrived whole (ConnectionLanes looked): it is read at once.
constexpr milliseconds kProbeReadLimit(1000);

struct Connection {
  const DeadlineStream* stream;
  bool close = false;
};
thread_local Connection* current = nullptr;  // the connection this thread serves

// httplib's listener hands each accepted connection to its task queue; this one runs the task at once, on the
// listener's thread, and the task (process_and_close_socket below) gives the connection to the lanes.
class AtOnce final : public httplib::TaskQueue {
 public:
  explicit AtOnce(ConnectionLanes& lanes) : lanes_(lanes) { lanes_.start(); }
  void enqueue(std::function<void()> task) override { task(); }
  void shutdown() override { lanes_.stop(); }

 private:
  ConnectionLanes& lanes_;
};

milliseconds wait_of(time_t sec, time_t usec) {
  return std::chrono::duration_cast<milliseconds>(std::chrono::seconds(sec) + std::chrono::microseconds(usec));
}

}  // namespace

HttpServer::HttpServer(int threads, std::chrono::seconds read_limit)
    : read_limit_(read_limit), lanes_(threads, [this](int sock, bool on_health_lane) { serve(sock, on_health_lane); }) {
  new_task_queue = [this] { return new AtOnce(lanes_); };
}

HttpServer::~HttpServer() { lanes_.stop(); }

bool HttpServer::process_and_close_socket(socket_t sock) {
  lanes_.add(sock);
  return true;
}

// httplib's own loop over a connection's requests (process_server_socket), each request's reading bounded.
void HttpServer::serve(socket_t sock, bool on_health_lane) {
  DeadlineStream stream(sock, wait_of(read_timeout_sec_, read_timeout_usec_), wait_of(write_timeout_sec_, write_timeout_usec_),
                        svr_sock_);
  Connection connection{&stream};
  current = &connection;
  const milliseconds limit = on_health_lane ? kProbeReadLimit : std::chrono::duration_cast<milliseconds>(read_limit_);
  std::size_t left = on_health_lane ? 1 : keep_alive_max_count_;  // a probe is answered alone
  while (svr_sock_ != INVALID_SOCKET && left > 0) {
    // The deadline counts from when the connection may send its request: the wait for it included.
    stream.set_deadline(DeadlineStream::Clock::now() + limit);
    if (!stream.wait_for_request(std::chrono::seconds(keep_alive_timeout_sec_))) break;
    bool closed = false;
    if (!process_request(stream, left == 1, closed, nullptr) || closed || connection.close || stream.timed_out()) break;
    --left;
  }
  current = nullptr;
  // Bytes already here but unread (a refused request's body) would turn the close into a reset, which can
  // cost the client the answer just sent: they are read and dropped first.
  char unread[4096];
  for (std::size_t dropped = 0; dropped < (1u << 20);) {
    const ssize_t n = recv(sock, unread, sizeof unread, MSG_DONTWAIT);
    if (n <= 0) break;
    dropped += static_cast<std::size_t>(n);
  }
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
}

bool request_read_timed_out() { return current && current->stream->timed_out(); }

void close_connection_after_answer() {
  if (current) current->close = true;
}

}  // namespace dattn::serve
