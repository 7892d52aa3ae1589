// Clients that send slowly or frame a request twice: httplib's read timeout restarted with every byte, so one
// trickling client per HTTP thread held every thread for ever and /health with them; two Content-Length
// headers were taken as the first one.
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "serve/raw_connection.h"
#include "serve/serve_harness.h"

namespace dattn::testing {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

TEST(ServeSlowClients, TricklingClientsOnEveryThreadLeaveHealthAnsweredAndAreClosedAtTheDeadline) {
  auto options = tiny_options(fresh_dir("slow"));
  options.http_threads = 4;
  options.request_read_timeout_s = 4;
  RunningServer s(options);
  const auto start = Clock::now();
  constexpr int kSlow = 4;  // one per HTTP thread
  std::vector<std::unique_ptr<RawConnection>> slow;
  for (int i = 0; i < kSlow; ++i) {
    slow.push_back(std::make_unique<RawConnection>(s.port));
    ASSERT_TRUE(slow.back()->connected());
    ASSERT_TRUE(slow.back()->send_text("POST /v1/videos HTTP/1.1\r\nHost: 127.0.0.1\r\n"));
  }
  // Each sends one byte of a header every 200 ms until the server closes it (or a minute passes).
  std::vector<double> closed_after(kSlow, -1);
  std::vector<std::thread> trickling;
  for (int i = 0; i < kSlow; ++i)
    trickling.emplace_back([&, i] {
      const std::string header = "X-Slow: a\r\n";
      for (std::size_t k = 0; seconds_since(start) < 60; ++k) {
        // Once answered, it sends no more (bytes left unread would make the server's close a reset).
        const bool sent = !slow[i]->received().empty() || slow[i]->send_text(header.substr(k % header.size(), 1));
        if (!sent || slow[i]->closed_by_server(200)) {
          closed_after[i] = seconds_since(start);
          return;
        }
      }
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // each has a thread by now
  httplib::Client probe("127.0.0.1", s.port);
  probe.set_read_timeout(30, 0);
  const auto health = probe.Get("/health");
  const double health_after = seconds_since(start);
  ASSERT_TRUE(health) << "no answer to /health while slow clients held every HTTP thread";
  EXPECT_EQ(health->status, 200);
  for (auto& t : trickling) t.join();
  for (int i = 0; i < kSlow; ++i) {
    EXPECT_GE(closed_after[i], 0) << "slow client " << i << " was not closed within a minute";
    // Answered while they held the threads; closed no sooner than the deadline, with 408 saying why.
    EXPECT_LT(health_after, closed_after[i]) << i;
    EXPECT_GE(closed_after[i], 3.9) << i;
    EXPECT_EQ(slow[i]->received().rfind("HTTP/1.1 408", 0), 0u) << slow[i]->received();
    EXPECT_NE(slow[i]->received().find("--request-read-timeout"), std::string::npos) << slow[i]->received();
  }
  // The threads are free again.
  auto c = s.client();
  EXPECT_EQ(c.Get("/v1/models")->status, 200);
  EXPECT_EQ(c.Post("/v1/videos/sync", video_json(1), "application/json")->status, 200);
}

// httplib took the first of two Content-Length headers; what the other framed as the body was read as the
// next request. Refused, and the connection ends.
TEST(ServeSlowClients, ConflictingContentLengthsAre400AndEndTheConnection) {
  RunningServer s(tiny_options(fresh_dir("content_length")));
  const std::string body = video_json(1);
  for (const auto& [headers, message] :
       std::vector<std::pair<std::string, std::string>>{
           {"Content-Length: " + std::to_string(body.size()) + "\r\nContent-Length: 2\r\n",
            "Content-Length is given twice, as " + std::to_string(body.size()) + " and 2"},
           {"Content-Length: 12abc\r\n", "Content-Length '12abc' is not a whole number of bytes"}}) {
    RawConnection raw(s.port);
    ASSERT_TRUE(raw.connected());
    ASSERT_TRUE(raw.send_text("POST /v1/videos HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
                              headers + "\r\n" + body));
    const std::string& answer = raw.read_until_closed(30);
    EXPECT_EQ(answer.rfind("HTTP/1.1 400", 0), 0u) << answer;
    EXPECT_NE(answer.find(message), std::string::npos) << answer;
    EXPECT_TRUE(raw.closed()) << "the connection stayed open after " << answer;
  }
  auto c = s.client();
  EXPECT_TRUE(body_of(c.Get("/v1/videos"))["data"].empty());  // nothing was queued
  // Repeating the same length is allowed (RFC 9110 takes it as one).
  RawConnection same(s.port);
  ASSERT_TRUE(same.send_text("POST /v1/videos HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                             "Connection: close\r\nContent-Length: " + std::to_string(body.size()) +
                             "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body));
  EXPECT_EQ(same.read_until_closed(30).rfind("HTTP/1.1 200", 0), 0u) << same.received();
}

}  // namespace
}  // namespace dattn::testing
