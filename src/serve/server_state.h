#pragma once
// What the HTTP routes share (private to src/serve): the options, the store, the loaded pipeline, the
// queue, and the helpers every route uses to read a body and answer.
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "dattn/serve/job_queue.h"
#include "dattn/serve/job_runner.h"
#include "dattn/serve/job_store.h"
#include "dattn/serve/metrics.h"
#include "dattn/serve/request_fields.h"
#include "dattn/serve/server.h"
#include "serve/route_table.h"

namespace dattn::serve {

struct ServerState {
  ServeOptions options;
  std::unique_ptr<JobStore> store;
  Metrics metrics;
  std::unique_ptr<Pipeline> pipeline;
  std::unique_ptr<JobRunner> runner;
  std::unique_ptr<JobQueue> queue;
  std::atomic<bool> ready{false}, stopping{false};
  std::string images_unavailable;  // why .png cannot be written in this build ("" when it can)
  std::mutex shutdown_mutex;
  int lock_fd = -1;  // flock on OUTPUT_DIR/lock: one server per job store
  RouteTable routes;  // every route goes through it (405 for a known path asked with another method)
  std::atomic<int> waiting_requests{0};  // sync and image requests holding their HTTP thread (WaitingSlot)
  std::vector<std::string> start_lines;  // what start() found, printed once the start succeeded
  bool announced = false;                // "ready" was printed (so "stopped" is, at shutdown)
};

// Held by a request that keeps its HTTP thread until its job ends (POST /v1/videos/sync, the images API). At
// most http_threads - 8 wait at once, so that /health, polling and queued submissions always find a thread
// (34 waiting sync requests took all 32 and a liveness probe timed out); past that, 429.
class WaitingSlot {
 public:
  explicit WaitingSlot(ServerState& state);
  ~WaitingSlot();
  WaitingSlot(const WaitingSlot&) = delete;
  WaitingSlot& operator=(const WaitingSlot&) = delete;

 private:
  ServerState& state_;
};

// A route body: reads the request, may throw ApiError; answer() turns it into the response.
using Route = std::function<void(const httplib::Request&, httplib::Response&)>;
// `needs_pipeline`: 503 until load() is done and from shutdown on.
httplib::Server::Handler guarded(ServerState& state, bool needs_pipeline, Route route);

void send_json(httplib::Response& res, int status, const nlohmann::json& body);
// The body's fields: application/json, multipart/form-data or a url-encoded form; else 400.
RequestFields fields_of(const httplib::Request& req);
// A job in the store for `id` (an invalid id is unknown too: it never reaches the store or a path).
JobRecord find_job(ServerState& state, const std::string& id);
// 501 when this build cannot write the PNGs of the images API (no FFmpeg), with the writer's reason.
// (Videos need no such check: start() refuses a --video-format this build cannot write.)
void require_image_writer(const ServerState& state);
// Queues `job`; 429 when the queue is full.
void enqueue(ServerState& state, const std::shared_ptr<Job>& job);

// The /v1/models entry: the model, its device and dtype, the video format and the backend each attention
// role resolved to.
nlohmann::json model_card(const ServerState& state);

void add_video_routes(httplib::Server& http, ServerState& state);
void add_service_routes(httplib::Server& http, ServerState& state);

}  // namespace dattn::serve
