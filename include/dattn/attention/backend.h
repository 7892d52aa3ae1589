#pragma once
// The interface every attention backend implements. One support predicate per backend answers both
// "can it run this?" (for `dattn backends` and model builds) and dispatch, so they never disagree.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "dattn/attention/problem.h"
#include "dattn/core/device.h"

namespace dattn {

struct Support {
  bool ok = false;
  std::string reason;  // empty when ok; otherwise e.g. "head_dim 256 not in {64, 128}"
  static Support yes() { return {true, {}}; }
  static Support no(std::string why) { return {false, std::move(why)}; }
};

// One accepted `extra` key of a backend: its JSON type, default and range, and a check.
struct ExtraKey {
  enum class Type { Integer, Number, Boolean, String };
  std::string name;
  Type type = Type::Number;
  nlohmann::json default_value;  // null: no default (the key is optional and off when absent)
  std::string range;             // human text: "64 or 128", "(0, 1]", "true or false"
  std::string help;
  // Returns an error text ("must be 64 or 128") when the (already type-checked) value is out of range.
  std::function<std::optional<std::string>(const nlohmann::json&)> check;
};

std::string_view extra_type_name(ExtraKey::Type t);

// What a backend accepts on a device, for `dattn backends`.
struct SupportSurface {
  std::vector<DType> dtypes;
  std::string head_dims;  // "any", "64, 128"
  std::string masks;      // "key padding", "key padding, general"
};

class AttentionBackend {
 public:
  virtual ~AttentionBackend() = default;
  virtual std::string_view name() const = 0;  // canonical upper-case name
  virtual std::string_view summary() const = 0;
  virtual bool lossy() const = 0;
  virtual Support supports(const AttentionShape& shape, Device device) const = 0;
  virtual SupportSurface surface(Device device) const = 0;
  virtual std::vector<ExtraKey> extra_keys() const { return {}; }
  // Why the validated `extra` (defaults filled in) cannot run on `device` (a CUDA-only kernel named on the
  // CPU), or nullopt; asked when a layer is built, so that such a choice fails before weights are used.
  virtual std::optional<std::string> extra_problem(const nlohmann::json& /*extra*/, Device /*device*/) const {
    return std::nullopt;
  }
  // Runs a validated problem whose shape `supports` accepted on `device`. `extra` is the backend's
  // validated extra object with defaults filled in (see validate_extra).
  virtual void run(const AttentionProblem& problem, const nlohmann::json& extra, Device device) const = 0;
};

// Checks `extra` against the backend's keys: unknown keys, types and ranges, with messages naming the
// backend, the key and what is accepted. `where` names the place ("role 'self'", "default").
void validate_extra(const AttentionBackend& backend, const nlohmann::json& extra, std::string_view where);
// The validated extra with every defaulted key filled in; what `run` receives.
nlohmann::json extra_with_defaults(const AttentionBackend& backend, const nlohmann::json& extra);

// Checks the problem, the backend's support on the device, then runs it. Unsupported is a UserError
// naming the backend and the reason; nothing is written to out in that case.
void run_attention(const AttentionBackend& backend, const AttentionProblem& problem,
                   const nlohmann::json& extra, Device device);

}  // namespace dattn
