// The `dattn generate` summary (see generate_report.h).
#include "dattn/generate_report.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace dattn::tool {

namespace {

std::string format(const char* fmt, double a, double b = 0) {
  char buf[128];
  std::snprintf(buf, sizeof buf, fmt, a, b);
  return buf;
}

}  // namespace

std::string summary_text(const GenerateReport& r) {
  std::ostringstream out;
  out << "wrote " << r.output << ": " << r.frames << " frame" << (r.frames == 1 ? "" : "s") << " of " << r.width << "x"
      << r.height;
  if (r.files.size() > 1) out << " in " << r.files.size() << " files";
  out << " (" << r.steps << " steps, guidance " << format("%g", r.guidance_scale)
      << (r.guidance_scale > 1 ? " " + r.guidance : std::string()) << ", "
      << (r.seeded_noise ? "seed " + std::to_string(r.seed) : std::string("initial latents from file")) << ", "
      << r.device << " " << r.dtype << ")\n";
  out << "attention:\n";
  for (const auto& a : r.attention)
    out << "  role=" << a.role << " backend=" << a.backend << " extra=" << a.extra.dump() << " source=" << a.source << "\n";
  out << "time per stage:\n";
  auto row = [&](const std::string& name, double ms) {
    out << "  " << name << std::string(name.size() < 26 ? 26 - name.size() : 1, ' ') << format("%10.1f ms", ms) << "\n";
  };
  for (const auto& [stage, ms] : r.stage_ms) row(stage, ms);
  row("total", r.total_ms);
  row("median step", r.median_step_ms);
  if (!r.loaded_ahead_ms.empty()) {
    // Their stage rows above are only the time waited for them.
    out << "loaded beside other stages (their own time):\n";
    for (const auto& [stage, ms] : r.loaded_ahead_ms) row(stage, ms);
  }
  for (const auto& [group, ops] : r.op_ms) {
    double sum = 0;
    std::vector<std::pair<std::string, double>> slowest_first(ops.begin(), ops.end());
    std::stable_sort(slowest_first.begin(), slowest_first.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    for (const auto& [op, ms] : ops) sum += ms;
    out << "op time in " << group << format(" (%.1f ms in ops):\n", sum);
    for (const auto& [op, ms] : slowest_first) row(op, ms);
  }
  if (r.peak_host_bytes >= 0)
    out << "peak host memory (VmHWM): " << format("%.1f MiB", double(r.peak_host_bytes) / (1024.0 * 1024.0)) << "\n";
  return out.str();
}

nlohmann::json summary_json(const GenerateReport& r) {
  nlohmann::json attention = nlohmann::json::array();
  for (const auto& a : r.attention)
    attention.push_back({{"role", a.role},
                         {"role_category", a.category ? nlohmann::json(*a.category) : nlohmann::json(nullptr)},
                         {"backend", a.backend},
                         {"extra", a.extra.is_null() ? nlohmann::json::object() : a.extra},
                         {"source", a.source}});
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& [stage, ms] : r.stage_ms) stages.push_back({{"stage", stage}, {"ms", ms}});
  nlohmann::json loaded_ahead = nlohmann::json::array();
  for (const auto& [stage, ms] : r.loaded_ahead_ms) loaded_ahead.push_back({{"stage", stage}, {"ms", ms}});
  nlohmann::json op_ms = nlohmann::json::object();
  for (const auto& [group, ops] : r.op_ms) op_ms[group] = ops;
  return {{"model", r.model},
          {"output", r.output},
          {"files", r.files},
          {"device", r.device},
          {"dtype", r.dtype},
          {"frames", r.frames},
          {"height", r.height},
          {"width", r.width},
          {"fps", r.fps},
          {"num_inference_steps", r.steps},
          {"guidance_scale", r.guidance_scale},
          {"guidance", r.guidance_scale > 1 ? r.guidance : "off"},  // the strategy only when guidance ran
          {"median_step_ms", r.median_step_ms},
          {"seed", r.seeded_noise ? nlohmann::json(r.seed) : nlohmann::json(nullptr)},
          {"attention", attention},
          {"stages", stages},
          {"loaded_ahead", loaded_ahead},
          {"op_ms", op_ms},
          {"total_ms", r.total_ms},
          {"peak_host_rss_bytes", r.peak_host_bytes >= 0 ? nlohmann::json(r.peak_host_bytes) : nlohmann::json(nullptr)}};
}

}  // namespace dattn::tool
