#pragma once
// Counters for GET /metrics, in Prometheus' text format: step time and stage durations as summaries
// (sum and count), requests by route and status. Jobs by state and queue depth are read when scraped.
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "dattn/serve/job.h"

namespace dattn::serve {

class Metrics {
 public:
  void observe_step(double ms);
  void observe_stages(const std::vector<std::pair<std::string, double>>& stage_ms);
  void count_response(int status);

  std::string render(std::size_t queue_depth, bool running, const std::map<JobState, std::int64_t>& jobs) const;

 private:
  struct Summary {
    double sum = 0;
    std::int64_t count = 0;
  };
  mutable std::mutex mutex_;
  Summary step_ms_;
  std::map<std::string, Summary> stage_ms_;
  std::map<int, std::int64_t> responses_;
};

}  // namespace dattn::serve
