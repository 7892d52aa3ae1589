#pragma once
// A video job as the store keeps it and the API shows it (OpenAI's video object).
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace dattn::serve {

enum class JobState { Queued, InProgress, Completed, Failed, Cancelled };

const char* state_name(JobState s);  // "queued", "in_progress", "completed", "failed", "cancelled"
std::optional<JobState> parse_state(const std::string& name);
inline bool is_finished(JobState s) { return s != JobState::Queued && s != JobState::InProgress; }

struct JobRecord {
  std::string id;
  JobState state = JobState::Queued;
  std::int64_t created_at = 0, completed_at = 0;  // Unix seconds; 0: not yet
  nlohmann::json request;  // the parsed request (prompt, width, height, num_frames, ...): what ran
  std::string error;       // why it failed or was cancelled
  int step = 0, total_steps = 0;
  nlohmann::json report;   // stage durations and peak memory of a completed job
};

// "video_" and 32 lowercase hex digits from the system's random source.
std::string new_job_id();
// Only ids of new_job_id's form are looked up, so no text from a client ever names a path.
bool valid_job_id(const std::string& id);

// The API's view of a job: {"id", "object": "video", "status", "created_at", "progress", ...}.
nlohmann::json video_object(const JobRecord& job, const std::string& model);

}  // namespace dattn::serve
