// /v1/videos: create (queued, or run and answered with the video by /sync: mp4 or safetensors, the
// server's --video-format), look up, list, download, cancel or delete.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
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

// The job's file with its content type (the server's format, or the other one for a job that a server
// started with the other --video-format ran), streamed from the open file in pieces of 1 MiB: a
// safetensors video of 704x1280x49 is 530 MB, of which no copy is held. A DELETE meanwhile removes the
// name, not the open file.
void send_file(const ServerState& s, const std::string& id, httplib::Response& res) {
  constexpr std::size_t kPiece = 1 << 20;
  const auto path = find_video(s.options.output_dir, id, s.options.video_format);
  auto in = std::make_shared<std::ifstream>(path ? *path : std::string(), std::ios::binary);
  std::error_code ec;
  const std::uintmax_t size = path ? std::filesystem::file_size(*path, ec) : 0;
  if (!path || !*in || ec) throw not_found("the video's file is missing from the output folder");
  auto piece = std::make_shared<std::vector<char>>(kPiece);
  res.set_content_provider(static_cast<std::size_t>(size), video_content_type(*video_format_of_file(*path)),
                           [in, piece](std::size_t offset, std::size_t length, httplib::DataSink& sink) {
                             in->seekg(static_cast<std::streamoff>(offset));
                             in->read(piece->data(), static_cast<std::streamsize>(std::min(length, piece->size())));
                             const std::streamsize n = in->gcount();
                             return n > 0 && sink.write(piece->data(), static_cast<std::size_t>(n));
                           });
}

// Parses, stores and queues a video request; the job as stored.
std::pair<std::shared_ptr<Job>, JobRecord> submit(ServerState& s, const httplib::Request& req) {
  const VideoRequest v = parse_video_request(fields_of(req), s.options.limits, s.options.defaults, *s.pipeline,
                                             s.options.model, s.options.video_format);
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
    try {
      s.store->remove(job->id);  // refused: it never existed
    } catch (const std::exception&) {  // the refusal stands; a left record is failed at the next start
    }
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
  // Finished (also just now, while this ran): its file (in either format) and its record go.
  remove_videos(s.options.output_dir, id);
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

// vLLM-Omni's sync answer: the video (mp4, or safetensors), with what the run cost in headers.
void send_video(ServerState& s, const Job& job, httplib::Response& res) {
  res.set_header("X-Video-Id", job.id);
  nlohmann::ordered_json stages = nlohmann::ordered_json::object();  // in the order the stages ran
  for (const auto& [stage, ms] : job.report.stage_ms) stages[stage] = ms;
  res.set_header("X-Stage-Durations-Ms", stages.dump());
  std::int64_t host = -1, device = -1;
  for (const auto& m : job.report.stage_memory) {
    host = std::max(host, m.peak_host_bytes);
    device = std::max(device, m.peak_device_bytes);
  }
  res.set_header("X-Peak-Host-Memory-Bytes", std::to_string(host));
  res.set_header("X-Peak-Device-Memory-Bytes", std::to_string(device));
  send_file(s, job.id, res);
}

}  // namespace

void add_video_routes(httplib::Server& http, ServerState& s) {
  s.routes.add(http, "POST", "/v1/videos", guarded(s, true, [&s](const httplib::Request& req, httplib::Response& res) {
    send_json(res, 200, video_object(submit(s, req).second, s.options.model));
  }));
  s.routes.add(http, "POST", "/v1/videos/sync", guarded(s, true, [&s](const httplib::Request& req, httplib::Response& res) {
    const WaitingSlot slot(s);
    const std::shared_ptr<Job> job = submit(s, req).first;
    job->wait();  // a client that hangs up meanwhile changes nothing: the job runs to its end
    if (job->state == JobState::Completed) return send_video(s, *job, res);
    if (s.stopping) throw not_ready(job->error);  // 503, as documented: retry on another server or later
    const int status = job->state == JobState::Cancelled ? 409 : 500;
    send_json(res, status, ApiError(status, "video " + job->id + " " + state_name(job->state) + ": " + job->error,
                                    status == 409 ? "invalid_request_error" : "server_error", std::nullopt,
                                    state_name(job->state)).body());
  }));
  s.routes.add(http, "GET", "/v1/videos", guarded(s, true, [&s](const httplib::Request& req, httplib::Response& res) { list(s, req, res); }));
  // An id is never "sync": GET or DELETE /v1/videos/sync is a known path with another method (405).
  s.routes.add(http, "GET", R"(/v1/videos/((?!sync$)[^/]+))", guarded(s, true, [&s](const httplib::Request& req, httplib::Response& res) {
    send_json(res, 200, video_object(find_job(s, req.matches[1]), s.options.model));
  }));
  s.routes.add(http, "GET", R"(/v1/videos/([^/]+)/content)", guarded(s, true, [&s](const httplib::Request& req, httplib::Response& res) {
    const JobRecord job = find_job(s, req.matches[1]);
    if (job.state != JobState::Completed)
      throw ApiError(409, "video " + job.id + " is " + state_name(job.state) + ", not completed", "invalid_request_error",
                     std::nullopt, "video_not_ready");
    send_file(s, job.id, res);
  }));
  s.routes.add(http, "DELETE", R"(/v1/videos/((?!sync$)[^/]+))", guarded(s, true, [&s](const httplib::Request& req, httplib::Response& res) {
    cancel_or_delete(s, req.matches[1], res);
  }));
}

}  // namespace dattn::serve
