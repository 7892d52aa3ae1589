#pragma once
// The end-of-run summary of `dattn generate`: resolved attention backends, time per stage, peak
// memory, as text (stdout) and as the --report JSON.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dattn/core/process_memory.h"
#include "dattn/pipeline/pipeline.h"

namespace dattn::tool {

struct GenerateReport {
  std::string model, output;
  std::vector<std::string> files;  // written
  std::string device, dtype;
  std::int64_t frames = 0, height = 0, width = 0;
  int fps = 0, steps = 0;
  double guidance_scale = 0;
  std::string guidance;  // the strategy that ran: "sequential" or "batched"
  double median_step_ms = 0;
  std::uint64_t seed = 0;
  bool seeded_noise = true;  // false when --initial-latents gave the noise
  std::vector<Resolution> attention;
  std::vector<std::pair<std::string, double>> stage_ms;  // the pipeline's stages, then "writing"
  // Loads that ran beside other stages (--load-ahead), with their own duration (GenerationReport).
  std::vector<std::pair<std::string, double>> loaded_ahead_ms;
  // With --op-times: per stage group, the milliseconds of each op stage (GenerationReport::op_ms).
  std::vector<std::pair<std::string, std::map<std::string, double>>> op_ms;
  double total_ms = 0;
  std::int64_t peak_host_bytes = -1;  // VmHWM; -1 when unknown
};


std::string summary_text(const GenerateReport& r);
nlohmann::json summary_json(const GenerateReport& r);

}  // namespace dattn::tool
