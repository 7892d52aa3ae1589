// The helpers every route shares: the guard that turns any exception into an OpenAI error, body
// reading, job lookup and queueing.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "dattn/serve/api_error.h"
#include "serve/server_state.h"

namespace dattn::serve {

void send_json(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  // dump's replacement mode: a prompt with invalid UTF-8 echoed back must not throw.
  res.set_content(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "application/json");
}

httplib::Server::Handler guarded(ServerState& state, bool needs_pipeline, Route route) {
  return [&state, needs_pipeline, route = std::move(route)](const httplib::Request& req, httplib::Response& res) {
    try {
      if (needs_pipeline && state.stopping) throw not_ready("the server is shutting down");
      if (needs_pipeline && !state.ready) throw not_ready("the model is still loading; GET /health says when it is ready");
      route(req, res);
    } catch (const ApiError& e) {
      send_json(res, e.status(), e.body());
    } catch (const std::exception& e) {
      send_json(res, 500, error_body(500, std::string("internal error: ") + e.what()));
    }
    if (res.status == -1) res.status = 200;  // what httplib would set after the handler
    res.set_header("Accept-Ranges", "none");  // see the pre-routing handler in server.cc
    // Counted before the answer leaves, so a client that reads /metrics next sees it.
    state.metrics.count_response(res.status);
  };
}

WaitingSlot::WaitingSlot(ServerState& state) : state_(state) {
  const int limit = std::max(1, state.options.http_threads - 8);
  if (state.waiting_requests.fetch_add(1) >= limit) {
    state.waiting_requests.fetch_sub(1);
    throw ApiError(429, std::to_string(limit) + " synchronous requests are already waiting for their jobs; retry later, "
                   "or submit with POST /v1/videos and poll", "rate_limit_error", std::nullopt, "too_many_waiting");
  }
}

WaitingSlot::~WaitingSlot() { state_.waiting_requests.fetch_sub(1); }

RequestFields fields_of(const httplib::Request& req) {
  const std::string type = req.get_header_value("Content-Type");
  if (req.is_multipart_form_data()) {
    std::vector<std::pair<std::string, std::string>> fields;
    for (const auto& [name, part] : req.files) {
      if (!part.filename.empty())
        throw bad_field(name, "field '" + name + "' is a file; this server takes text fields only");
      fields.emplace_back(name, part.content);
    }
    return RequestFields::from_form(fields);
  }
  if (type.rfind("application/json", 0) == 0) return RequestFields::from_json(req.body);
  if (type.rfind("application/x-www-form-urlencoded", 0) == 0)
    return RequestFields::from_form({req.params.begin(), req.params.end()});
  throw ApiError(415, "Content-Type must be application/json, multipart/form-data or application/x-www-form-urlencoded, got '" + type + "'",
                 "invalid_request_error", std::nullopt, "unsupported_media_type");
}

JobRecord find_job(ServerState& state, const std::string& id) {
  std::optional<JobRecord> job;
  if (valid_job_id(id)) job = state.store->get(id);
  if (!job) throw not_found("no video with id '" + id + "'");
  return *job;
}

void require_image_writer(const ServerState& state) {
  if (!state.images_unavailable.empty())
    throw ApiError(501, "this build cannot write .png images: " + state.images_unavailable, "server_error",
                   std::nullopt, "writer_unavailable");
}

void enqueue(ServerState& state, const std::shared_ptr<Job>& job) {
  if (state.queue->push(job)) return;
  if (state.stopping) throw not_ready("the server is shutting down");
  throw queue_full(state.queue->max_waiting());
}

}  // namespace dattn::serve
