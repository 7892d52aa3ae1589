#include "dattn/serve/metrics.h"

#include <sstream>

namespace dattn::serve {

void Metrics::observe_step(double ms) {
  std::lock_guard lock(mutex_);
  step_ms_.sum += ms;
  ++step_ms_.count;
}

void Metrics::observe_stages(const std::vector<std::pair<std::string, double>>& stage_ms) {
  std::lock_guard lock(mutex_);
  for (const auto& [stage, ms] : stage_ms) {
    stage_ms_[stage].sum += ms;
    ++stage_ms_[stage].count;
  }
}

void Metrics::count_response(int status) {
  std::lock_guard lock(mutex_);
  ++responses_[status];
}

std::string Metrics::render(std::size_t queue_depth, bool running, const std::map<JobState, std::int64_t>& jobs) const {
  std::lock_guard lock(mutex_);
  std::ostringstream out;
  out.precision(17);  // sums grow for the server's lifetime: the default 6 digits made rate() coarse
  out << "# HELP dattn_queue_depth Jobs waiting to run (the running one not counted).\n"
      << "# TYPE dattn_queue_depth gauge\ndattn_queue_depth " << queue_depth << "\n"
      << "# HELP dattn_job_running 1 while a generation runs.\n"
      << "# TYPE dattn_job_running gauge\ndattn_job_running " << (running ? 1 : 0) << "\n"
      << "# HELP dattn_jobs Video jobs in the job store by state.\n# TYPE dattn_jobs gauge\n";
  for (JobState s : {JobState::Queued, JobState::InProgress, JobState::Completed, JobState::Failed, JobState::Cancelled}) {
    const auto it = jobs.find(s);
    out << "dattn_jobs{state=\"" << state_name(s) << "\"} " << (it == jobs.end() ? 0 : it->second) << "\n";
  }
  out << "# HELP dattn_step_seconds Wall time of a denoising step.\n# TYPE dattn_step_seconds summary\n"
      << "dattn_step_seconds_sum " << step_ms_.sum / 1000.0 << "\ndattn_step_seconds_count " << step_ms_.count << "\n"
      << "# HELP dattn_stage_seconds Wall time of a pipeline stage.\n# TYPE dattn_stage_seconds summary\n";
  for (const auto& [stage, s] : stage_ms_) {
    out << "dattn_stage_seconds_sum{stage=\"" << stage << "\"} " << s.sum / 1000.0 << "\n"
        << "dattn_stage_seconds_count{stage=\"" << stage << "\"} " << s.count << "\n";
  }
  out << "# HELP dattn_http_responses_total HTTP responses by status.\n# TYPE dattn_http_responses_total counter\n";
  for (const auto& [status, n] : responses_) out << "dattn_http_responses_total{code=\"" << status << "\"} " << n << "\n";
  return out.str();
}

}  // namespace dattn::serve
