#pragma once
// The request a golden pipeline case was made with: its JSON beside the .safetensors (prompt, size, steps,
// guidance; max_sequence_length where the case sets it) and the case's input.latents as --initial-latents.
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "dattn/io/safetensors.h"
#include "dattn/pipeline/pipeline.h"
#include "support/golden_dir.h"

namespace dattn::testing {

// `case_path` is relative to the golden folder, without extension (e.g. "/wan_tiny/cases/pipeline_t2v_fp32").
inline GenerationRequest golden_request(const std::string& case_path, const SafetensorsFile& file) {
  std::ifstream in(golden_dir() + case_path + ".json");
  const nlohmann::json j = nlohmann::json::parse(in);
  GenerationRequest r;
  r.prompt = j.at("prompt");
  r.negative_prompt = j.at("negative_prompt");
  r.height = j.at("height");
  r.width = j.at("width");
  r.num_frames = j.at("num_frames");
  r.num_inference_steps = j.at("num_inference_steps");
  r.guidance_scale = j.at("guidance_scale");
  if (j.contains("max_sequence_length")) r.max_sequence_length = j.at("max_sequence_length");
  r.initial_latents = Tensor::from_f64(file.read_f64("input.latents"), file.info("input.latents").shape);
  return r;
}

}  // namespace dattn::testing
