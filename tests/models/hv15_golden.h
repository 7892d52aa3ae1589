#pragma once
// Golden-case support for the HunyuanVideo-1.5 transformer tests: the tiny pipeline's transformer and
// the cond call of pipeline step 1 (hv15_tiny/cases/transformer_t2v, float64 reference).
#include <string>

#include "dattn/io/safetensors.h"
#include "dattn/io/weight_store.h"
#include "dattn/models/hunyuanvideo15/transformer.h"
#include "support/golden_dir.h"

namespace dattn::testing {

inline std::string hv15_tiny_transformer_dir() { return golden_dir() + "/hv15_tiny/pipeline/transformer"; }
inline std::string hv15_transformer_case() { return golden_dir() + "/hv15_tiny/cases/transformer_t2v.safetensors"; }

struct Hv15Case {
  Tensor hidden_states, timestep;  // float64, as stored
  Hv15TextInputs text;
};

inline Hv15Case read_hv15_case(const SafetensorsFile& f) {
  const auto read = [&](const char* name) { return tensor_from_safetensors(f, name, DType::F64); };
  Hv15Case c;
  c.hidden_states = read("input.hidden_states");
  c.timestep = read("input.timestep");
  c.text.encoder_hidden_states = read("input.encoder_hidden_states");
  c.text.encoder_attention_mask = read("input.encoder_attention_mask");
  c.text.encoder_hidden_states_2 = read("input.encoder_hidden_states_2");
  c.text.encoder_attention_mask_2 = read("input.encoder_attention_mask_2");
  c.text.image_embeds = read("input.image_embeds");
  return c;
}

inline AttentionSettings hv15_backend(const std::string& backend) {
  AttentionSettings s;
  if (!backend.empty()) s.config = AttentionConfig::from_json_string(R"({"default":")" + backend + R"("})");
  return s;
}

}  // namespace dattn::testing
