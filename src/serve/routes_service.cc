// The routes beside /v1/videos: /health, /v1/models, /metrics and the images API.
#include <chrono>
#include <memory>
#include <string>

#include "dattn/models/quantization.h"
#include "dattn/serve/api_error.h"
#include "dattn/serve/base64.h"
#include "dattn/serve/request_parse.h"
#include "serve/server_state.h"

namespace dattn::serve {
namespace {

void images(ServerState& s, const httplib::Request& req, httplib::Response& res) {
  require_image_writer(s);
  const ImageRequest image = parse_image_request(fields_of(req), s.options.limits, s.options.defaults, *s.pipeline,
                                                 s.options.model);
  auto job = std::make_shared<Job>();
  job->id = new_job_id();
  job->kind = JobKind::Image;
  job->persisted = false;
  job->request = image.generation;
  job->count = image.n;
  const WaitingSlot slot(s);
  enqueue(s, job);
  job->wait();
  if (job->state != JobState::Completed && s.stopping) throw not_ready(job->error);  // 503: shut down, retry
  if (job->state != JobState::Completed)
    throw ApiError(500, std::string("image generation ") + state_name(job->state) + ": " + job->error, "server_error",
                   std::nullopt, state_name(job->state));
  nlohmann::json data = nlohmann::json::array();
  for (const std::string& png : job->images_png) data.push_back({{"b64_json", base64_encode(png)}});
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  send_json(res, 200, {{"created", std::chrono::duration_cast<std::chrono::seconds>(now).count()}, {"data", data}});
}

}  // namespace

namespace {

// The ranks every job runs on (docs/parallel.md): 1 x 1 x 1 for one process.
nlohmann::json parallel_card(const parallel::ParallelDegrees& d) {
  return {{"ranks", d.product()}, {"tensor_parallel_size", d.tensor_parallel}, {"ulysses_degree", d.ulysses},
          {"cfg_parallel_size", d.cfg}};
}

}  // namespace

nlohmann::json model_card(const ServerState& s) {
  const Pipeline& p = *s.pipeline;
  nlohmann::json attention = nlohmann::json::array();
  for (const Resolution& r : p.attention()) {
    attention.push_back({{"role", r.role}, {"backend", r.backend}, {"source", r.source}, {"extra", r.extra}});
    if (r.category) attention.back()["category"] = *r.category;
  }
  return {{"id", s.options.model}, {"object", "model"}, {"owned_by", "dattn"}, {"class_name", p.class_name()},
          {"device", std::string(device_name(p.options().device))}, {"dtype", std::string(dtype_name(p.options().dtype))},
          {"quantization", quantization_name(p.options().quantization)},
          {"video_format", video_format_name(s.options.video_format)},
          {"video_content_type", video_content_type(s.options.video_format)}, {"attention", attention},
          {"parallel", parallel_card(p.options().parallel.degrees)}};
}

void add_service_routes(httplib::Server& http, ServerState& s) {
  s.routes.add(http, "GET", "/health", guarded(s, false, [&s](const httplib::Request&, httplib::Response& res) {
    if (!s.ready || s.stopping) throw not_ready(s.stopping ? "shutting down" : "loading the model");
    send_json(res, 200, {{"status", "ok"}});
  }));
  s.routes.add(http, "GET", "/v1/models", guarded(s, true, [&s](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200, {{"object", "list"}, {"data", nlohmann::json::array({model_card(s)})}});
  }));
  s.routes.add(http, "GET", "/metrics", guarded(s, false, [&s](const httplib::Request&, httplib::Response& res) {
    const bool loaded = s.ready;  // the queue exists from then on
    const std::size_t depth = loaded ? s.queue->waiting() : 0;
    const bool running = loaded && s.queue->busy();
    res.set_content(s.metrics.render(depth, running, s.store->count_by_state()), "text/plain; version=0.0.4");
  }));
  s.routes.add(http, "POST", "/v1/images/generations",
            guarded(s, true, [&s](const httplib::Request& req, httplib::Response& res) { images(s, req, res); }));
}

}  // namespace dattn::serve
