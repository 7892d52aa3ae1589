// /v1/videos: create (queued, or run and answered with the mp4 by /sync), look up, list, download,
// cancel or delete.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dattn/serve/api_error.h"
#include "dattn/serve/request_parse.h"
#include "serve/server_state.h"

namespace dattn::serve {
namespace {

std::int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw not_found("the video's file is missing from the output folder");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Parses, stores and queues a video request; the job as stored.
std::pair<std::shared_ptr<Job>, JobRecord> submit(ServerState& s, const httplib::Request& req) {
  require_writer(s, ".mp4");
  const VideoRequest v = parse_video_request(fields_of(req), s.options.limits, s.options.defaults, *s.pipeline,
                                             s.options.model);
  auto job = std::make_shared<Job>();
  job->id = new_job_id();
  job->request = v.generation;
  job->fps = v.fps;
  JobRecord record;
  record.id = job->id;
  record.created_at = now_seconds();
  record.request = v.to_json();
  record.total_steps = v.generation.num_inference_steps;
  s.store->insert(record);
  try {
    enqueue(s, job);
  } catch (const ApiError&) {
    s.store->remove(job->id);  // refused: it never existed
    throw;
  }
  return {job, record};
}

nlohmann::json deleted(const std::string& id) { return {{"id", id}, {"object", "video.deleted"}, {"deleted", true}}; }

void cancel_or_delete(ServerState& s, const std::string& id, httplib::Response& res) {
  const JobRecord job = find_job(s, id);
  if (const auto waiting = s.queue->take_waiting(id)) {
    s.store->finish(id, JobState::Cancelled, "cancelled before it started");
    waiting->state = JobState::Cancelled;
    waiting->error = "cancelled before it started";
    waiting->done();
    return send_json(res, 200, video_object(find_job(s, id), s.options.model));
  }
  if (!is_finished(job.state)) {
    // The worker stops at its next step; the store says cancelled from now on, whatever it then does.
    s.queue->cancel_running(id);
    if (s.store->finish(id, JobState::Cancelled, "cancelled while running"))
      return send_json(res, 200, video_object(find_job(s, id), s.options.model));
  }
  // Finished (also just now, while this ran): its file and its record go.
  std::error_code ignored;
  std::filesystem::remove(video_path(s.options.output_dir, id), ignored);
  s.store->remove(id);
  send_json(res, 200, deleted(id));
}

void list(ServerState& s, const httplib::Request& req, httplib::Response& res) {
  std::vector<std::pair<std::string, std::string>> query;
  for (const auto& [k, v] : req.params) query.emplace_back(k, v);
  const RequestFields f = RequestFields::from_form(query);
  f.allow_only({"limit", "after", "order"});
  const int limit = static_cast<int>(f.integer("limit", 1, 100).value_or(20));
  const std::string order = f.text("order").value_or("desc");
  if (order != "asc" && order != "desc") throw bad_field("order", "'order' must be asc or desc");
  const std::string after = f.text("after").value_or("");
  std::optional<JobStore::Page> page;
  if (after.empty() || valid_job_id(after)) page = s.store->list(limit, after, order == "asc");
  if (!page) throw bad_field("after", "'after' names no video: '" + after + "'");
  nlohmann::json data = nlohmann::json::array();
  for (const JobRecord& j : page->jobs) data.push_back(video_object(j, s.options.model));
  nlohmann::json body = {{"object", "list"}, {"data", data}, {"has_more", page->has_more}};
  body["first_id"] = page->jobs.empty() ? nlohmann::json(nullptr) : nlohmann::json(page->jobs.front().id);
  body["last_id"] = page->jobs.empty() ? nlohmann::json(nullptr) : nlohmann::json(page->jobs.back().id);
  send_json(res, 200, body);
}

// vLLM-Omni's sync answer: the mp4, with what the run cost in headers.
void send_video(ServerState& s, const Job& job, httplib::Response& res) {
  res.set_header("X-Video-Id", job.id);
  nlohmann::json stages = nlohmann::json::object();
  for (const auto& [stage, ms] : job.report.stage_ms) stages[stage] = ms;
  res.set_header("X-Stage-Durations-Ms", stages.dump());
  std::int64_t host = -1, device = -1;
  for (const auto& m : job.report.stage_memory) {
    host = std::max(host, m.peak_host_bytes);
    device = std::max(device, m.peak_device_bytes);
  }
  res.set_header("X-Peak-Host-Memory-Bytes", std::to_string(host));
  res.set_header("X-Peak-Device-Memory-Bytes", std::to_string(device));
  res.set_content(read_file(video_path(s.options.output_dir, job.id)), "video/mp4");
}

}  // namespace

void add_video_routes(httplib::Server& http, ServerState& s) {
  http.Post("/v1/videos", guarded(s, true, [&s](const httplib::Request& req, httplib::Response& res) {
    send_json(res, 200, video_object(submit(s, req).second, s.options.model));
  }));
  http.Post("/v1/videos/sync", guarded(s, true, [&s](const httplib::Request& req, httplib::Response& res) {
    const std::shared_ptr<Job> job = submit(s, req).first;
    job->wait();  // a client that hangs up meanwhile changes nothing: the job runs to its end
    if (job->state == JobState::Completed) return send_video(s, *job, res);
    const int status = job->state == JobState::Cancelled ? 409 : 500;
    send_json(res, status, ApiError(status, "video " + job->id + " " + state_name(job->state) + ": " + job->error,
                                    status == 409 ? "invalid_request_error" : "server_error", std::nullopt,
                                    state_name(job->state)).body());
  }));
  http.Get("/v1/videos", guarded(s, true, [&s](const httplib::Request& req, httplib::Response& res) { list(s, req, res); }));
  http.Get(R"(/v1/videos/([^/]+))", guarded(s, true, [&s](const httplib::Request& req, httplib::Response& res) {
    send_json(res, 200, video_object(find_job(s, req.matches[1]), s.options.model));
  }));
  http.Get(R"(/v1/videos/([^/]+)/content)", guarded(s, true, [&s](const httplib::Request& req, httplib::Response& res) {
    const JobRecord job = find_job(s, req.matches[1]);
    if (job.state != JobState::Completed)
      throw ApiError(409, "video " + job.id + " is " + state_name(job.state) + ", not completed", "invalid_request_error",
                     std::nullopt, "video_not_ready");
    res.set_content(read_file(video_path(s.options.output_dir, job.id)), "video/mp4");
  }));
  http.Delete(R"(/v1/videos/([^/]+))", guarded(s, true, [&s](const httplib::Request& req, httplib::Response& res) {
    cancel_or_delete(s, req.matches[1], res);
  }));
}

}  // namespace dattn::serve
