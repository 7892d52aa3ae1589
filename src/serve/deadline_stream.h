#pragma once
// httplib's socket stream with one more bound: a deadline for the request being read. httplib's own stream
// waits its read timeout for each read anew, so a client trickling a byte every few seconds held an HTTP
// thread for as long as it liked (slowloris); here every read's wait also ends at the request's deadline,
// and when the server stops. One stream serves a connection's requests in turn (bytes read ahead stay buffered).
#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include <httplib.h>

namespace dattn::serve {

class DeadlineStream final : public httplib::Stream {
 public:
  using Clock = std::chrono::steady_clock;
  // `read_wait`, `write_wait`: the longest one read or write may wait (httplib's timeouts); `listening`:
  // httplib's listening socket, INVALID_SOCKET once the server stops.
  DeadlineStream(socket_t sock, std::chrono::milliseconds read_wait, std::chrono::milliseconds write_wait,
                 const std::atomic<socket_t>& listening);

  // Reads from now on end at `deadline` (the next request's).
  void set_deadline(Clock::time_point deadline);
  // Whether a read stopped at the deadline.
  bool timed_out() const { return timed_out_; }
  // Waits for the next request's first byte: at most `idle`, and not past the deadline.
  bool wait_for_request(std::chrono::milliseconds idle);

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return sock_; }

 private:
  // poll() for `events` up to `wait`; for reads also cut at the deadline and when the server stops.
  bool wait_for(short events, std::chrono::milliseconds wait, bool reading) const;

  socket_t sock_;
  std::chrono::milliseconds read_wait_, write_wait_;
  const std::atomic<socket_t>& listening_;
  Clock::time_point deadline_ = Clock::time_point::max();
  mutable bool timed_out_ = false;
  std::vector<char> buffer_;
  std::size_t offset_ = 0, size_ = 0;  // unread bytes: buffer_[offset_, size_)
};

}  // namespace dattn::serve
