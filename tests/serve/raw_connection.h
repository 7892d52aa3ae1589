#pragma once
// A TCP connection to a test server written byte by byte: for what httplib's client will not send (two
// Content-Length headers, a request trickled a byte at a time).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <string>

namespace dattn::testing {

class RawConnection {
 public:
  explicit RawConnection(int port) : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = fd_ >= 0 && connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~RawConnection() {
    if (fd_ >= 0) close(fd_);
  }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool connected() const { return connected_; }
  bool send_text(const std::string& text) {
    return send(fd_, text.data(), text.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(text.size());
  }
  // Reads what arrives for up to `ms`; true once the server has closed the connection.
  bool closed_by_server(int ms) {
    if (closed_) return true;
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, ms) <= 0) return false;
    char bytes[4096];
    const ssize_t n = recv(fd_, bytes, sizeof bytes, 0);
    if (n > 0) received_.append(bytes, static_cast<std::size_t>(n));
    closed_ = closed_ || n <= 0;
    return closed_;
  }
  // Everything until the server closes the connection, or `seconds` pass.
  const std::string& read_until_closed(int seconds) {
    for (int i = 0; i < seconds * 10 && !closed_by_server(100); ++i) {
    }
    return received_;
  }
  const std::string& received() const { return received_; }
  bool closed() const { return closed_; }

 private:
  int fd_;
  bool connected_ = false, closed_ = false;
  std::string received_;
};

}  // namespace dattn::testing
