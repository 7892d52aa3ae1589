#include "serve/deadline_stream.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace dattn::serve {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kSlice(50);  // how soon a wait notices that the server stops
constexpr std::size_t kBufferBytes = 4096;

void name_of(const sockaddr_storage& addr, socklen_t len, std::string& ip, int& port) {
  char host[NI_MAXHOST], service[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, host, sizeof host, service, sizeof service,
                  NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
    ip = host;
    port = std::atoi(service);
  }
}

}  // namespace

DeadlineStream::DeadlineStream(socket_t sock, milliseconds read_wait, milliseconds write_wait,
                               const std::atomic<socket_t>& listening)
    : sock_(sock), read_wait_(read_wait), write_wait_(write_wait), listening_(listening), buffer_(kBufferBytes) {}

void DeadlineStream::set_deadline(Clock::time_point deadline) {
  deadline_ = deadline;
  timed_out_ = false;
}

bool DeadlineStream::wait_for(short events, milliseconds wait, bool reading) const {
  const auto start = Clock::now();
  auto end = start + wait;
  if (reading && deadline_ < end) end = deadline_;
  // A read stops with the server (no new request is taken); a write goes on (the answers of the last ones).
  while (!reading || listening_ != INVALID_SOCKET) {
    const auto now = Clock::now();
    if (now >= end) break;
    const auto left = std::chrono::duration_cast<milliseconds>(end - now) + milliseconds(1);
    pollfd p{sock_, events, 0};
    const int n = poll(&p, 1, static_cast<int>(std::min(left, kSlice).count()));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return false;
  }
  if (reading && Clock::now() >= deadline_) timed_out_ = true;
  return false;
}

bool DeadlineStream::wait_for_request(milliseconds idle) {
  return offset_ < size_ || wait_for(POLLIN, idle, true);
}

bool DeadlineStream::is_readable() const { return offset_ < size_ || wait_for(POLLIN, read_wait_, true); }

bool DeadlineStream::is_writable() const {
  if (!wait_for(POLLOUT, write_wait_, false)) return false;
  // As httplib's: a peer that has closed its end takes no answer.
  pollfd p{sock_, POLLIN, 0};
  if (poll(&p, 1, 0) <= 0) return true;
  char byte;
  return recv(sock_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

ssize_t DeadlineStream::read(char* ptr, size_t size) {
  if (offset_ == size_) {
    if (!is_readable()) return -1;
    ssize_t n;
    do {
      n = recv(sock_, buffer_.data(), buffer_.size(), 0);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) return n;
    offset_ = 0;
    size_ = static_cast<std::size_t>(n);
  }
  const std::size_t n = std::min(size, size_ - offset_);
  std::memcpy(ptr, buffer_.data() + offset_, n);
  offset_ += n;
  return static_cast<ssize_t>(n);
}

ssize_t DeadlineStream::write(const char* ptr, size_t size) {
  if (!is_writable()) return -1;
  ssize_t n;
  do {
    n = send(sock_, ptr, size, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n;
}

void DeadlineStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (getpeername(sock_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) name_of(addr, len, ip, port);
}

void DeadlineStream::get_local_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (getsockname(sock_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) name_of(addr, len, ip, port);
}

}  // namespace dattn::serve
