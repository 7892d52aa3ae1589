#pragma once
// httplib's server with its connections served here (httplib runs process_request): a request's headers
// and body must arrive within one deadline in all (DeadlineStream), and /health is answered while slow
// clients hold every HTTP thread (ConnectionLanes).
#include <chrono>

#include <httplib.h>

#include "serve/connection_lanes.h"

namespace dattn::serve {

class HttpServer final : public httplib::Server {
 public:
  // `threads`: the workers; `read_limit`: the time a request may take to arrive, headers and body.
  HttpServer(int threads, std::chrono::seconds read_limit);
  ~HttpServer() override;

 private:
  // Called by httplib's listener for each accepted connection: hands it to a lane.
  bool process_and_close_socket(socket_t sock) override;
  void serve(socket_t sock, bool on_health_lane);

  std::chrono::seconds read_limit_;
  ConnectionLanes lanes_;
};

// For the handlers of the connection being served on this thread (false / no effect on another thread):
// whether reading its request stopped at the deadline (its error answer is 408), and ending the connection
// after the answer (a request whose framing is in doubt: what follows it is no request).
bool request_read_timed_out();
void close_connection_after_answer();

}  // namespace dattn::serve
