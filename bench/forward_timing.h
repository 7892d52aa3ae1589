#pragma once
// What the forward benchmarks share: their random inputs, the random checkpoint they may write first,
// the run dtype and attention settings from their flags, and timing one model forward on CUDA (warm-up
// runs, then CUDA-event timed runs with StageTimer on; the run with the median total supplies the stage
// split: attention, GEMM, rest).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dattn/attention/config.h"
#include "dattn/core/device_memory.h"
#include "dattn/core/error.h"
#include "dattn/core/stage_timer.h"
#include "dattn/core/tensor.h"
#include "dattn/models/random_checkpoint.h"

namespace dattn::bench {

inline Tensor gaussian(const Shape& shape, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist;
  std::vector<float> v(static_cast<std::size_t>(shape_numel(shape)));
  for (float& x : v) x = dist(rng);
  return Tensor::from_f32(v, shape);
}

// --make-checkpoint CONFIG: write `model` with random bf16 weights first (for machines where only the
// benchmark binary runs).
inline void make_checkpoint_if_asked(const std::string& config, const std::string& model) {
  if (config.empty()) return;
  const auto t0 = std::chrono::steady_clock::now();
  const RandomCheckpointSummary sum = write_random_checkpoint(config, model, RandomCheckpointOptions{});
  std::fprintf(stderr, "wrote %zu tensors (%.2f B parameters) to %s in %.1f s\n", sum.tensors, sum.parameters / 1e9,
               model.c_str(), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

// --dtype and --backend: the run dtype, and every role on `backend` (the platform default when empty).
struct RunFlags {
  DType dtype = DType::BF16;
  AttentionSettings attention;
};
inline RunFlags run_flags(const std::string& dtype, const std::string& backend) {
  const auto dt = parse_dtype(dtype);
  if (!dt) throw UserError("--dtype '" + dtype + "': expected bf16, fp16 or fp32");
  AttentionFlags flags;
  if (!backend.empty()) flags.backend_shorthand = backend;
  return {*dt, settings_from_command_line(flags)};
}

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
