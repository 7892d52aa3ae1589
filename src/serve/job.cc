#include "dattn/serve/job.h"

#include <array>
#include <cstdio>
#include <random>
#include <string_view>

namespace dattn::serve {
namespace {

constexpr std::array<const char*, 5> kStateNames = {"queued", "in_progress", "completed", "failed", "cancelled"};
constexpr std::string_view kIdPrefix = "video_";
constexpr std::size_t kIdHexDigits = 32;

}  // namespace

const char* state_name(JobState s) { return kStateNames[static_cast<std::size_t>(s)]; }

std::optional<JobState> parse_state(const std::string& name) {
  for (std::size_t i = 0; i < kStateNames.size(); ++i)
    if (name == kStateNames[i]) return static_cast<JobState>(i);
  return std::nullopt;
}

std::string new_job_id() {
  static thread_local std::random_device device;
  std::string id(kIdPrefix);
  for (std::size_t i = 0; i < kIdHexDigits; ++i) id += "0123456789abcdef"[device() % 16];
  return id;
}

bool valid_job_id(const std::string& id) {
  if (id.size() != kIdPrefix.size() + kIdHexDigits || id.compare(0, kIdPrefix.size(), kIdPrefix) != 0) return false;
  for (std::size_t i = kIdPrefix.size(); i < id.size(); ++i)
    if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f'))) return false;
  return true;
}

nlohmann::json video_object(const JobRecord& job, const std::string& model) {
  const nlohmann::json& r = job.request;
  nlohmann::json o = {{"id", job.id}, {"object", "video"}, {"model", model}, {"status", state_name(job.state)},
                      {"created_at", job.created_at}};
  o["completed_at"] = job.completed_at ? nlohmann::json(job.completed_at) : nlohmann::json(nullptr);
  // OpenAI's progress is a percentage; step and total_steps say which denoising step runs.
  const int percent = job.state == JobState::Completed ? 100
                      : job.total_steps > 0            ? job.step * 100 / job.total_steps
                                                       : 0;
  o["progress"] = percent;
  o["step"] = job.step;
  o["total_steps"] = job.total_steps;
  if (r.contains("width") && r.contains("height"))
    o["size"] = std::to_string(r["width"].get<std::int64_t>()) + "x" + std::to_string(r["height"].get<std::int64_t>());
  if (r.contains("num_frames") && r.contains("fps"))
  {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g", (r["num_frames"].get<double>() - 1) / r["fps"].get<double>());
    o["seconds"] = seconds;
  }
  o["request"] = r;
  if (!job.error.empty()) o["error"] = {{"code", state_name(job.state)}, {"message", job.error}};
  if (!job.report.is_null()) o["report"] = job.report;
  return o;
}

}  // namespace dattn::serve
