#pragma once
// Golden-case comparison for the model tests: a forward runs with every intermediate recorded, and the
// records are compared with the reference in forward order, so that a failure names the first
// intermediate that disagrees.
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dattn/attention/metrics.h"
#include "dattn/core/tensor.h"
#include "dattn/io/safetensors.h"

namespace dattn::testing {

// Intermediates in the order the forward produced them.
struct Recording {
  std::vector<std::string> order;
  std::map<std::string, Tensor> values;
  std::function<void(const std::string&, const Tensor&)> hook() {
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
