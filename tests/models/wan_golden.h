#pragma once
// Golden-case support for the Wan transformer tests: reading a diffusers case file, running the model
// with every intermediate recorded, and comparing the records with the reference in forward order so
// that a failure names the first intermediate that disagrees.
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dattn/attention/metrics.h"
#include "dattn/io/safetensors.h"
#include "dattn/io/weight_store.h"
#include "dattn/models/wan/transformer.h"
#include "support/golden_dir.h"

namespace dattn::testing {

inline std::string wan_tiny_transformer_dir() { return golden_dir() + "/wan_tiny/pipeline/transformer"; }
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

// Intermediates in the order the forward produced them.
struct Recording {
  std::vector<std::string> order;
  std::map<std::string, Tensor> values;
  WanCapture hook() {
    return [this](const std::string& name, const Tensor& v) {
      if (!values.count(name)) order.push_back(name);
      values[name] = v.to(Device::CPU).clone();
    };
  }
};

struct Comparison {
  std::string name;
  ErrorStats stats;
  std::string problem;  // "" when within the limit
};

// The float32 limit for one intermediate. The reference ran on a GPU, where float32 expf/sinf/cosf are
// within 2 ulp but not correctly rounded: the timestep embedding's float32 frequencies then differ by an
// ulp here and there, and at t = 700 one ulp of a frequency moves its 700 rad argument by 4e-5. That
// puts ~1e-5 relative noise (growing with t) into temb and timestep_proj that no CPU float32 evaluation
// can remove; dattn's correctly rounded float32 steps are what diffusers computes on a CPU. The noise
// averages out downstream (blocks.N.out ~2e-7), so everything else keeps the 1e-5 bound.
inline double float32_limit(const std::string& name) {
  return name.rfind("condition_embedder.t", 0) == 0 && name != "condition_embedder.text" ? 3e-5 : 1e-5;
}

// Every reference tensor of `f` except input.* and output.* must have been recorded, with its shape.
// Returns one entry per compared name, in forward order; unrecorded reference names come last with a
// problem. `limit(name)` bounds rel L2.
template <class Limit>
std::vector<Comparison> compare_intermediates(const SafetensorsFile& f, const Recording& rec, Limit limit) {
  std::vector<Comparison> out;
  for (const auto& name : rec.order) {
    if (!f.contains(name)) continue;
    Comparison c{name, {}, ""};
    const Tensor& got = rec.values.at(name);
    if (got.shape() != f.info(name).shape) {
      c.problem = "shape " + shape_str(got.shape()) + " vs reference " + shape_str(f.info(name).shape);
    } else {
      const auto g = got.to_f64_vector();
      const auto r = f.read_f64(name);
      c.stats = compare(g.data(), r.data(), g.size());
      if (c.stats.nonfinite) c.problem = std::to_string(c.stats.nonfinite) + " NaN/Inf";
      else if (!(c.stats.rel_l2 <= limit(name))) c.problem = "rel_l2 above " + std::to_string(limit(name));
    }
    out.push_back(c);
  }
  for (const auto& [name, info] : f.tensors()) {
    (void)info;
    if (name.rfind("input.", 0) == 0 || name.rfind("output.", 0) == 0) continue;
    if (!rec.values.count(name)) out.push_back({name, {}, "never recorded by the forward"});
  }
  return out;
}

inline std::optional<Comparison> first_disagreement(const std::vector<Comparison>& cs) {
  for (const auto& c : cs)
    if (!c.problem.empty()) return c;
  return std::nullopt;
}

inline std::string report(const std::vector<Comparison>& cs) {
  std::string s;
  for (const auto& c : cs)
    s += "  " + c.name + ": " + describe(c.stats) + (c.problem.empty() ? "" : "  <-- " + c.problem) + "\n";
  return s;
}

inline ErrorStats compare_output(const Tensor& got, const SafetensorsFile& f, const std::string& name = "output.sample") {
  const auto g = got.to_f64_vector();
  const auto r = f.read_f64(name);
  return compare(g.data(), r.data(), std::min(g.size(), r.size()));
}

}  // namespace dattn::testing
