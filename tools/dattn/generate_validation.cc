#include "dattn/generate_validation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>
#include <utility>

#include "dattn/attention/metrics.h"
#include "dattn/core/error.h"
#include "dattn/models/qwen2_5_vl.h"

namespace dattn::tool {
namespace {

// PSNR with peak 1 from a mean squared error; +inf for identical outputs.
double psnr_from_mse(double mse) {
  return mse > 0 ? 10.0 * std::log10(1.0 / mse) : std::numeric_limits<double>::infinity();
}

std::string db_text(double db) {
  if (std::isinf(db)) return "inf (identical)";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f dB", db);
  return buf;
}

// JSON has no infinity: identical outputs give null (and "identical": true beside it).
nlohmann::json db_json(double db) { return std::isinf(db) ? nlohmann::json(nullptr) : nlohmann::json(db); }

std::string backends_text(const std::vector<Resolution>& attention) {
  std::string out;
  for (const auto& a : attention) out += (out.empty() ? "" : ", ") + a.role + "=" + a.backend;
  return out;
}

nlohmann::json run_json(const RunRecord& r) {
  nlohmann::json attention = nlohmann::json::object();
  for (const auto& a : r.attention) attention[a.role] = a.backend;
  return {{"total_ms", r.total_ms}, {"dit_ms", r.dit_ms}, {"median_step_ms", median_step_ms(r)},
          {"attention", attention}, {"quantization", r.quantization}};
}

std::string linears_text(const RunRecord& r) { return r.quantization == "fp8" ? "fp8" : "unquantized"; }

}  // namespace

double median_step_ms(const RunRecord& r) {
  if (r.step_ms.empty()) return 0;
  std::vector<double> s = r.step_ms;
  std::sort(s.begin(), s.end());
  const std::size_t n = s.size();
  return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

AttentionSettings baseline_settings(const std::string& backend, const AttentionSettings& run) {
  AttentionConfig config;
  config.default_spec = AttentionSpec{backend, nlohmann::json::object()};
  if (const auto it = run.config.per_role.find(kQwenTextEncoderRole); it != run.config.per_role.end())
    config.per_role[it->first] = it->second;
  AttentionSettings settings;
  settings.config = config.normalized();  // canonical name; ConfigError names an unknown one
  return settings;
}

ValidationResult compare_runs(const std::string& baseline, RunRecord candidate, RunRecord base) {
  const Tensor& a = candidate.frames;
  const Tensor& b = base.frames;
  if (a.shape() != b.shape() || candidate.latents.size() != base.latents.size())
    throw std::logic_error("validation: the two runs produced outputs of different shapes");
  if (a.dtype() != DType::F32 || b.dtype() != DType::F32 || a.device() != Device::CPU || b.device() != Device::CPU)
    throw std::logic_error("validation: frames must be float32 host tensors");
  ValidationResult v;
  v.baseline = baseline;
  // Straight from the float frames: a full-size video is 10^8 values, whose float64 copies would
  // cost gigabytes of host memory.
  const float* fa = a.data_as<float>();
  const float* fb = b.data_as<float>();
  const std::int64_t frames = a.dim(0), per_frame = a.numel() / std::max<std::int64_t>(frames, 1);
  double total_sq = 0, ref_sq = 0, worst_frame_mse = 0;
  for (std::int64_t f = 0; f < frames; ++f) {
    double sq = 0;
    for (std::int64_t i = f * per_frame; i < (f + 1) * per_frame; ++i) {
      const double d = double(fa[i]) - double(fb[i]);
      sq += d * d;
      ref_sq += double(fb[i]) * double(fb[i]);
    }
    total_sq += sq;
    worst_frame_mse = std::max(worst_frame_mse, sq / static_cast<double>(per_frame));
  }
  v.psnr_db = psnr_from_mse(total_sq / static_cast<double>(a.numel()));
  v.min_frame_psnr_db = psnr_from_mse(worst_frame_mse);
  v.video_rel_l2 = ref_sq > 0 ? std::sqrt(total_sq / ref_sq) : (total_sq > 0 ? INFINITY : 0.0);
  const ErrorStats lat = compare(candidate.latents.data(), base.latents.data(), base.latents.size());
  v.latents_rel_l2 = lat.rel_l2;
  v.latents_cosine = lat.cosine;
  v.candidate = std::move(candidate);
  v.base = std::move(base);
  return v;
}

std::string validation_text(const ValidationResult& v) {
  const auto ratio = [](double base, double cand) { return cand > 0 ? base / cand : 0.0; };
  const double cand_step = median_step_ms(v.candidate), base_step = median_step_ms(v.base);
  std::ostringstream out;
  char buf[256];
  out << "validation against " << v.baseline << " (same request; the baseline ran second, ";
  if (v.warmup_steps > 0)
    out << "both after an untimed warm-up of " << v.warmup_steps << " step(s)):\n";
  else
    out << "no warm-up: the first run paid the process's one-time set-up):\n";
  out << "  this run:  " << backends_text(v.candidate.attention) << "; linears " << linears_text(v.candidate) << "\n";
  out << "  baseline:  " << backends_text(v.base.attention) << "; linears " << linears_text(v.base) << "\n";
  std::snprintf(buf, sizeof buf, "  end to end     %10.1f ms vs %10.1f ms  (%.2fx)\n", v.candidate.total_ms,
                v.base.total_ms, ratio(v.base.total_ms, v.candidate.total_ms));
  out << buf;
  std::snprintf(buf, sizeof buf, "  DiT stage      %10.1f ms vs %10.1f ms  (%.2fx)\n", v.candidate.dit_ms, v.base.dit_ms,
                ratio(v.base.dit_ms, v.candidate.dit_ms));
  out << buf;
  std::snprintf(buf, sizeof buf, "  median step    %10.1f ms vs %10.1f ms  (%.2fx; the fairest speed figure)\n",
                cand_step, base_step, ratio(base_step, cand_step));
  out << buf;
  out << "  video PSNR     " << db_text(v.psnr_db) << " (worst frame " << db_text(v.min_frame_psnr_db) << ")\n";
  std::snprintf(buf, sizeof buf, "  video rel L2   %.3e\n  latents        rel L2 %.3e, cosine %.6f\n", v.video_rel_l2,
                v.latents_rel_l2, v.latents_cosine);
  out << buf;
  return out.str();
}

nlohmann::json validation_json(const ValidationResult& v) {
  return {{"baseline", v.baseline},
          {"warmup_steps", v.warmup_steps},
          {"this_run", run_json(v.candidate)},
          {"baseline_run", run_json(v.base)},
          {"psnr_db", db_json(v.psnr_db)},
          {"min_frame_psnr_db", db_json(v.min_frame_psnr_db)},
          {"identical", std::isinf(v.psnr_db)},
          {"video_rel_l2", v.video_rel_l2},
          {"latents_rel_l2", v.latents_rel_l2},
          {"latents_cosine", v.latents_cosine}};
}

}  // namespace dattn::tool
