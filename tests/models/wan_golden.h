#pragma once
// Golden-case support for the Wan transformer tests: the tiny model and its case files (the comparison
// in forward order is models/golden_compare.h).
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dattn/io/safetensors.h"
#include "dattn/io/weight_store.h"
#include "dattn/models/wan/transformer.h"
#include "models/golden_compare.h"
#include "support/golden_dir.h"

namespace dattn::testing {

inline std::string wan_tiny_transformer_dir() { return golden_dir() + "/wan_tiny/pipeline/transformer"; }
// Run options of a device, dtype and attention settings, the rest at their defaults.
inline WanRunOptions wan_run_options(Device device, DType dtype, AttentionSettings attention = {}) {
  WanRunOptions o;
  o.device = device;
  o.dtype = dtype;
  o.attention = std::move(attention);
  return o;
}
inline std::string wan_case_path(const std::string& name) {
  return golden_dir() + "/wan_tiny/cases/transformer_" + name + ".safetensors";
}

struct WanCase {
  Tensor hidden_states, timestep, encoder_hidden_states;  // float64, as stored
};

inline WanCase read_wan_case(const SafetensorsFile& f) {
  return {tensor_from_safetensors(f, "input.hidden_states", DType::F64),
          tensor_from_safetensors(f, "input.timestep", DType::F64),
          tensor_from_safetensors(f, "input.encoder_hidden_states", DType::F64)};
}

// The float32 limit for one intermediate. The reference ran on a GPU, where float32 expf/sinf/cosf are
// within 2 ulp but not correctly rounded: the timestep embedding's float32 frequencies then differ by an
// ulp here and there, and at t = 700 one ulp of a frequency moves its 700 rad argument by 4e-5. That
// puts ~1e-5 relative noise (growing with t) into temb and timestep_proj that no CPU float32 evaluation
// can remove; dattn's correctly rounded float32 steps are what diffusers computes on a CPU. The noise
// averages out downstream (blocks.N.out ~2e-7), so everything else keeps the 1e-5 bound.
inline double float32_limit(const std::string& name) {
  return name.rfind("condition_embedder.t", 0) == 0 && name != "condition_embedder.text" ? 3e-5 : 1e-5;
}

}  // namespace dattn::testing
