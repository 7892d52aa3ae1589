#pragma once
// Timing one model forward on CUDA for the forward benchmarks: warm-up runs, then CUDA-event timed runs
// with StageTimer on; the run with the median total supplies the stage split (attention, GEMM, rest).
#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dattn/core/device_memory.h"
#include "dattn/core/stage_timer.h"

namespace dattn::bench {

struct ForwardTiming {
  double median_ms = 0, attention_ms = 0, gemm_ms = 0;
  std::map<std::string, double> stages_ms;
};

inline ForwardTiming time_forward(const std::function<void()>& forward, int warmup, int iters) {
  std::vector<double> total;
  std::vector<std::map<std::string, double>> stages;
  for (int i = 0; i < warmup + iters; ++i) {
    StageTimer::enable(Device::CUDA);
    GpuTimer timer;
    timer.start();
    forward();
    timer.stop();
    const double ms = timer.elapsed_ms();
    auto st = StageTimer::collect();
    if (i >= warmup) {
      total.push_back(ms);
      stages.push_back(st);
    }
  }
  StageTimer::disable();
  std::vector<std::size_t> order(total.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](auto a, auto b) { return total[a] < total[b]; });
  const std::size_t med = order[order.size() / 2];
  return {total[med], stages[med]["attention"], stages[med]["gemm"], stages[med]};
}

// The fields every forward benchmark reports.
inline nlohmann::json timing_json(const ForwardTiming& t, std::size_t weights_bytes) {
  const double gib = 1024.0 * 1024 * 1024;
  return {{"median_ms", t.median_ms},
          {"attention_ms", t.attention_ms},
          {"gemm_ms", t.gemm_ms},
          {"rest_ms", t.median_ms - t.attention_ms - t.gemm_ms},
          {"weights_gib", weights_bytes / gib},
          {"peak_gib", device_bytes_peak() / gib},
          {"stages_ms", t.stages_ms}};
}

}  // namespace dattn::bench
