// The server's life: the store opened and recovered, the socket bound, the pipeline loaded, the
// worker started; at shutdown the reverse, with every unfinished job recorded as failed.
#include "dattn/serve/server.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "dattn/core/error.h"
#include "dattn/io/video_writer.h"
#include "dattn/serve/api_error.h"
#include "dattn/serve/video_files.h"
#include "serve/http_server.h"
#include "serve/server_state.h"

namespace dattn::serve {
namespace fs = std::filesystem;
namespace {

constexpr const char* kRestartReason =
    "the server stopped (crash, kill or restart) while the job was queued or running; submit it again";

// Files under videos/ that no completed job owns: a video the crash interrupted, a writer's temporary.
// A completed job's file is kept in either format (a server started with the other --video-format).
void remove_orphans(JobStore& store, const std::string& output_dir) {
  for (const auto& entry : fs::directory_iterator(fs::path(output_dir) / "videos")) {
    const std::string id = entry.path().stem().string();
    const bool owned = video_format_of_file(entry.path().string()) && valid_job_id(id) && [&] {
      const auto job = store.get(id);
      return job && job->state == JobState::Completed;
    }();
    if (!owned) {
      std::error_code ignored;
      fs::remove(entry.path(), ignored);
    }
  }
  std::error_code ignored;
  for (const auto& entry : fs::directory_iterator(images_dir(output_dir), ignored)) fs::remove(entry.path(), ignored);
}

// OpenAI's error body for httplib's own answers (unknown route, body too large, bad multipart). A known
// path asked with a method it does not take is 405 with the methods it takes, not 404.
void fill_error(ServerState& s, const httplib::Request& req, httplib::Response& res) {
  if (!res.body.empty()) return;  // a route's own error, already counted
  std::string message = "request refused";
  if (res.status == 404) {
    const std::string allowed = s.routes.methods_for(req.path);
    if (allowed.empty()) {
      message = "no such route";
    } else {
      res.status = 405;
      res.set_header("Allow", allowed);
      message = "method " + req.method + " is not allowed on " + req.path + "; it takes " + allowed;
    }
  }
  if (res.status == 413)
    message = req.get_header_value("Content-Type").rfind("application/x-www-form-urlencoded", 0) == 0
                  ? "a url-encoded form body is limited to 8192 bytes (the HTTP library's cap); send JSON or "
                    "multipart/form-data, which --max-body-bytes bounds"
                  : "the body is larger than this server's limit (--max-body-bytes)";
  if (res.status == 400) message = "malformed request (headers or multipart body)";
  if (request_read_timed_out()) {  // httplib saw a read fail: the deadline cut it (DeadlineStream)
    res.status = 408;
    message = "the request did not arrive within " + std::to_string(s.options.request_read_timeout_s) +
              " s, headers and body (--request-read-timeout); the connection is closed";
    res.set_header("Connection", "close");
  }
  s.metrics.count_response(res.status);
  send_json(res, res.status, error_body(res.status, message));
}

// Two Content-Length headers that differ, or one that is not a number: httplib took the first, and what the
// other framed as body was read as the next request (request smuggling behind a proxy that took the other).
// The answer is 400 and the connection ends: where the body ends is unknown.
std::optional<std::string> content_length_conflict(const httplib::Request& req) {
  const auto [first, last] = req.headers.equal_range("Content-Length");
  for (auto it = first; it != last; ++it) {
    const std::string& v = it->second;
    if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos)
      return "Content-Length '" + v + "' is not a whole number of bytes";
    if (v != first->second)
      return "Content-Length is given twice, as " + first->second + " and " + v + "; send one";
  }
  return std::nullopt;
}

// A second server on the same folder would fail the first one's running jobs as "left unfinished".
// The lock goes with the process, so a kill -9 leaves none behind.
int lock_output_dir(const std::string& dir) {
  const std::string path = (fs::path(dir) / "lock").string();
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw UserError("--output-dir '" + dir + "': cannot create " + path);
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);
    throw UserError("--output-dir '" + dir + "' is in use by another dattn serve; give each server its own folder");
  }
  return fd;
}

// --video-format as this build can write it: refused before anything is opened when it needs FFmpeg and
// this build has none, then probed in the videos folder (mp4 also needs FFmpeg's H.264 encoder).
void require_video_format(const ServeOptions& o) {
#ifndef DATTN_WITH_FFMPEG
  if (o.video_format == VideoFormat::MP4)
    throw UserError("--video-format mp4 needs a build with FFmpeg (DATTN_VIDEO); use --video-format safetensors");
#endif
  if (o.video_format != VideoFormat::MP4 && o.video_format != VideoFormat::SAFETENSORS)
    throw UserError("--video-format: expected mp4 or safetensors");
}

void probe_video_format(const ServeOptions& o) {
  const std::string name = video_format_name(o.video_format);
  try {
    check_output_path((fs::path(o.output_dir) / "videos" / (std::string("probe") + video_extension(o.video_format))).string());
  } catch (const UserError& e) {
    throw UserError("--video-format " + name + ": " + e.what() +
                    (o.video_format == VideoFormat::MP4 ? "; or use --video-format safetensors" : ""));
  }
}

}  // namespace

Server::Server(ServeOptions options) : state_(std::make_unique<ServerState>()) { state_->options = std::move(options); }

Server::~Server() {
  shutdown();
  if (state_->lock_fd >= 0) close(state_->lock_fd);
}

int Server::start() {
  ServerState& s = *state_;
  require_video_format(s.options);
  check_defaults(s.options.limits, s.options.defaults);
  if (s.options.request_read_timeout_s < 1 || s.options.http_threads < 1)
    throw UserError("--request-read-timeout and the HTTP threads must be at least 1");
  // A client that hangs up mid-answer must cost a failed write, not the process.
  std::signal(SIGPIPE, SIG_IGN);
  const std::string& dir = s.options.output_dir;
  std::error_code ec;
  fs::create_directories(fs::path(dir) / "videos", ec);
  fs::create_directories(images_dir(dir), ec);
  if (ec) throw UserError("--output-dir '" + dir + "': cannot create: " + ec.message());
  probe_video_format(s.options);
  s.lock_fd = lock_output_dir(dir);
  s.store = std::make_unique<JobStore>((fs::path(dir) / "jobs.sqlite").string());
  const auto failed = s.store->fail_unfinished(kRestartReason);
  if (!failed.empty())
    s.start_lines.push_back(std::to_string(failed.size()) + " job(s) left unfinished by the last run marked failed");
  remove_orphans(*s.store, dir);
  s.start_lines.push_back(std::string("videos: ") + video_format_name(s.options.video_format) + " (" +
                          video_content_type(s.options.video_format) + ") in " + (fs::path(dir) / "videos").string());
  try {
    check_output_path((fs::path(images_dir(dir)) / "probe.png").string());
  } catch (const UserError& e) {
    s.images_unavailable = e.what();
    s.start_lines.push_back(std::string("warning: no image output (POST /v1/images/generations answers 501): ") +
                            e.what());
  }

  // Each request's reading is bounded in all, and /health keeps a lane of its own (serve/http_server.h).
  http_ = std::make_unique<HttpServer>(s.options.http_threads, std::chrono::seconds(s.options.request_read_timeout_s));
  http_->set_payload_max_length(s.options.limits.max_body_bytes);
  // httplib's default adds SO_REUSEPORT, with which a second server could bind the same port and take
  // half the connections; SO_REUSEADDR alone still allows a restart while old connections linger.
  int listen_sock = -1;
  http_->set_socket_options([&listen_sock](int sock) {  // httplib's socket_t is an int on POSIX
    const int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    listen_sock = sock;
  });
  http_->set_pre_routing_handler([&s](const httplib::Request& req, httplib::Response& res) {
    // httplib checks --max-body-bytes against Content-Length only and would read a chunked body whole: it
    // is refused before a byte of it is read.
    if (req.get_header_value("Transfer-Encoding").find("chunked") != std::string::npos) {
      s.metrics.count_response(411);
      // The connection stays open: closing it with the body unread resets it, and the client may lose this
      // answer; httplib then refuses the body's first line as a malformed request and closes.
      send_json(res, 411, error_body(411, "send the body with a Content-Length header: chunked request bodies are "
                                          "not accepted (the body limit, --max-body-bytes, is checked against it)"));
      return httplib::Server::HandlerResponse::Handled;
    }
    // Range requests are not served: httplib 0.11 cut the body of a 200 answer to the range (a client would keep
    // the fragment as the whole video) and wrapped the length of an unsatisfiable one. The whole body goes out
    // with 200, which HTTP allows; httplib owns req as a non-const object, so clearing its ranges is sound.
    const_cast<httplib::Request&>(req).ranges.clear();
    if (const auto conflict = content_length_conflict(req)) {
      s.metrics.count_response(400);
      close_connection_after_answer();
      send_json(res, 400, ApiError(400, *conflict, "invalid_request_error", "Content-Length", "invalid_header").body());
      return httplib::Server::HandlerResponse::Handled;
    }
    if (s.options.api_key.empty() || req.path.rfind("/v1/", 0) != 0) return httplib::Server::HandlerResponse::Unhandled;
    if (req.get_header_value("Authorization") == "Bearer " + s.options.api_key)
      return httplib::Server::HandlerResponse::Unhandled;
    s.metrics.count_response(401);
    send_json(res, 401, ApiError(401, "missing or wrong API key: send \"Authorization: Bearer KEY\"",
                                 "authentication_error", std::nullopt, "invalid_api_key").body());
    return httplib::Server::HandlerResponse::Handled;
  });
  http_->set_error_handler([&s](const httplib::Request& req, httplib::Response& res) { fill_error(s, req, res); });
  add_video_routes(*http_, s);
  add_service_routes(*http_, s);

  int port = s.options.port;
  if (port == 0) port = http_->bind_to_any_port(s.options.host);
  else if (!http_->bind_to_port(s.options.host, port)) port = -1;
  if (port <= 0)
    throw UserError("cannot listen on " + s.options.host + ":" + std::to_string(s.options.port) +
                    " (in use, or not an address of this machine)");
  // Debian's compiled cpp-httplib listens with a backlog of 5: a burst of clients (20 in the concurrency
  // test) overflowed it and some lost their connection before an answer. A second listen() on the bound
  // socket only resizes its queue.
  if (listen_sock >= 0) ::listen(listen_sock, SOMAXCONN);
  auto listener_ended = std::make_shared<std::atomic<bool>>(false);
  listener_ = std::thread([this, listener_ended] {
    http_->listen_after_bind();
    *listener_ended = true;
  });
  // httplib's stop() does nothing until the listener runs: a shutdown right after start (a model that fails
  // to load at once) left the listener running and shutdown() joining it forever. Wait until it runs.
  while (!http_->is_running() && !*listener_ended) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (*listener_ended)  // nothing may say it listens when it does not
    throw UserError("cannot listen on " + s.options.host + ":" + std::to_string(port) + ": the listener stopped at once");
  s.start_lines.push_back("listening on http://" + s.options.host + ":" + std::to_string(port));
  return port;
}

void Server::load(const std::function<std::unique_ptr<Pipeline>()>& loader) {
  ServerState& s = *state_;
  s.pipeline = loader();
  check_defaults(*s.pipeline, s.options.defaults, s.options.video_format);
  for (const std::string& line : s.start_lines) std::fprintf(stderr, "[dattn serve] %s\n", line.c_str());
  for (const Resolution& r : s.pipeline->attention())
    std::fprintf(stderr, "[dattn serve] attention: %s -> %s (%s)\n", r.role.c_str(), r.backend.c_str(), r.source.c_str());
  s.runner = std::make_unique<JobRunner>(*s.pipeline, *s.store, s.metrics, s.options.output_dir,
                                         s.options.video_format, s.stopping);
  JobRunner& runner = *s.runner;
  s.queue = std::make_unique<JobQueue>(s.options.max_queue, [&runner](Job& job) { runner(job); });
  std::lock_guard lock(s.shutdown_mutex);
  if (!s.stopping) s.ready = true;
  s.announced = true;
  std::fprintf(stderr, "[dattn serve] ready: %s\n", s.options.model.c_str());
}

void Server::shutdown() {
  ServerState& s = *state_;
  {
    std::lock_guard lock(s.shutdown_mutex);
    if (s.stopping && !http_) return;
    s.stopping = true;
    s.ready = false;
  }
  if (s.queue)
    for (const auto& job : s.queue->stop()) {
      if (job->persisted) s.store->finish_or_log(job->id, JobState::Failed, kShutdownReason);
      job->state = JobState::Failed;
      job->error = kShutdownReason;
      job->done();
    }
  // A job stored but not yet queued when the queue stopped.
  if (s.store) {
    try {
      s.store->fail_unfinished(kShutdownReason);
    } catch (const std::exception& e) {  // shutdown goes on; the next start fails them instead
      std::fprintf(stderr, "[dattn serve] could not mark unfinished jobs failed: %s\n", e.what());
    }
  }
  if (http_) {
    http_->stop();
    if (listener_.joinable()) listener_.join();
    http_.reset();
  }
  if (s.announced) std::fprintf(stderr, "[dattn serve] stopped\n");  // a failed start says only why
}

}  // namespace dattn::serve
