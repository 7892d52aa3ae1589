#pragma once
// `dattn generate --validate-against BACKEND`: the same request (model, prompt, seed, size, frames,
// steps, device, dtype) run a second time with every attention role on one baseline backend, and the
// user's run compared with it on end-to-end time, DiT-stage time and output quality.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dattn/attention/config.h"
#include "dattn/pipeline/pipeline.h"

namespace dattn::tool {

// What one run of the pipeline took, and what it produced for the comparison.
struct RunRecord {
  double total_ms = 0;               // Pipeline::run, all stages (loading included)
  double dit_ms = 0;                 // the "denoising" stage
  std::vector<double> step_ms;       // per denoising step
  std::vector<Resolution> attention;  // the backend each role resolved to
  std::string quantization = "none";  // the linears: none or fp8
  Tensor frames;                     // [F, H, W, 3] float32 in [0, 1]
  std::vector<double> latents;       // the last step's latents (the DiT's output before the VAE)
};

// The median of the per-step times: the fairest speed figure, since a step that pays one-time set-up
// (kernel plans, memory pools) counts no more than any other.
double median_step_ms(const RunRecord& r);

struct ValidationResult {
  std::string baseline;  // canonical backend name
  int warmup_steps = 0;  // untimed steps each configuration ran before the timed pair
  RunRecord candidate, base;
  double psnr_db = 0;            // whole video, peak 1; +inf when identical
  double min_frame_psnr_db = 0;  // the worst single frame
  double video_rel_l2 = 0;       // ||candidate - baseline|| / ||baseline|| over all pixels
  double latents_rel_l2 = 0, latents_cosine = 1;
};

// Settings that run every diffusion attention role on `backend` (canonical name checked: ConfigError when
// unknown). A text encoder's role set in the run (HunyuanVideo-1.5's text_encoder.self, which the default
// never reaches) is kept, so that both runs encode the prompt alike and the comparison is the backend's.
AttentionSettings baseline_settings(const std::string& backend, const AttentionSettings& run);

// Compares two finished runs of the same request (frames and latents of equal shapes).
ValidationResult compare_runs(const std::string& baseline, RunRecord candidate, RunRecord base);

std::string validation_text(const ValidationResult& v);
nlohmann::json validation_json(const ValidationResult& v);

}  // namespace dattn::tool
