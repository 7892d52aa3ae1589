// AttentionConfig from and to the "plain dict" JSON form (spec section 3). Reading happens in two
// steps: parse_raw checks the structure and flattens nested roles; finalize resolves "auto", canonical
// backend names and validates extras. Command-line flags merge between the two (config_flags.cc).
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "attention/config/config_raw.h"
#include "dattn/attention/backend.h"
#include "dattn/attention/registry.h"
#include "dattn/core/error.h"

namespace dattn {
namespace config_detail {
namespace {

using nlohmann::json;

std::string role_where(const std::string& role) { return "per_role entry for role '" + role + "'"; }

// Fields of a spec object: `backend` a string, `extra` an object (null extra means none given).
// `where` is "Invalid default spec" or "Invalid per_role entry for role 'R'".
RawSpec spec_from_object(const json& obj, const std::string& where) {
  RawSpec spec;
  if (auto it = obj.find("backend"); it != obj.end()) {
    if (!it->is_string())
      throw ConfigError(where + ": 'backend' must be a string, got " + it->type_name() + ".");
    spec.backend = it->get<std::string>();
  }
  if (auto it = obj.find("extra"); it != obj.end() && !it->is_null()) {
    if (!it->is_object())
      throw ConfigError(where + ": 'extra' must be an object, got " + it->type_name() + ".");
    spec.extra = *it;
  }
  return spec;
}

RawSpec parse_default(const json& value) {
  const std::string where = "Invalid default spec";
  if (value.is_string()) return RawSpec{value.get<std::string>(), std::nullopt};
  if (!value.is_object())
    throw ConfigError(where + ": expected a backend name or an object {\"backend\": NAME, \"extra\": {...}}, got " +
                      value.type_name() + ".");
  for (const auto& [key, _] : value.items())
    if (key != "backend" && key != "extra")
      throw ConfigError("Unknown key '" + key + "' in default spec: expected 'backend' or 'extra'.");
  return spec_from_object(value, where);
}

void add_role(RawConfig& raw, const std::string& role, RawSpec spec) {
  // Nested and dotted forms can name the same role; silently keeping one would hide the other.
  if (!raw.per_role.emplace(role, std::move(spec)).second)
    throw ConfigError("Duplicate per_role entry for role '" + role +
                      "': it is given more than once (nested and dotted forms name the same role).");
}

void check_role_name(const std::string& role) {
  if (role.empty() || role.front() == '.' || role.back() == '.' || role.find("..") != std::string::npos)
    throw ConfigError("Invalid role name '" + role +
                      "' in per_role: role names and their dotted parts must be non-empty.");
}

// One per_role value: a name, a spec object, or an object of nested roles (flattened with dots).
// `depth` counts the role's dotted parts: a config built in C++ (from_json) has no parser in front.
void parse_role(RawConfig& raw, const std::string& role, const json& value, int depth = 1) {
  const std::string where = "Invalid " + role_where(role);
  if (depth > kMaxConfigDepth)
    throw ConfigError("Invalid per_role entry: roles nest deeper than " + std::to_string(kMaxConfigDepth) +
                      " levels (role '" + role.substr(0, 40) + "...').");
  check_role_name(role);
  if (value.is_null()) return add_role(raw, role, RawSpec{"auto", std::nullopt});  // null: unset, like auto
  if (value.is_string()) return add_role(raw, role, RawSpec{value.get<std::string>(), std::nullopt});
  if (!value.is_object())
    throw ConfigError(where + ": expected a backend name, an object {\"backend\": NAME, \"extra\": {...}} or "
                      "nested roles, got " + value.type_name() + ".");
  if (value.empty()) throw ConfigError("Empty per_role entry for role '" + role + "'");
  const bool is_spec = value.contains("backend") || value.contains("extra");
  if (is_spec) {
    if (value.size() > value.count("backend") + value.count("extra"))
      throw ConfigError(where + ": cannot mix backend/extra with nested role keys.");
    return add_role(raw, role, spec_from_object(value, where));
  }
  for (const auto& [key, nested] : value.items()) parse_role(raw, role + "." + key, nested, depth + 1);
}

// "auto" drops the spec; otherwise canonical name and validated extra. `where` names it in errors.
std::optional<AttentionSpec> finalize_spec(const RawSpec& raw, const std::string& error_where,
                                           const std::string& extra_where) {
  if (!raw.backend)
    throw ConfigError(error_where + (raw.extra ? ": 'extra' given without 'backend'." : ": 'backend' is missing."));
  if (is_auto(*raw.backend)) return std::nullopt;  // its extra goes with it: no backend to check it against
  const AttentionBackend& backend = backend_by_name(*raw.backend);
  AttentionSpec spec{std::string(backend.name()), raw.extra.value_or(json::object())};
  validate_extra(backend, spec.extra, extra_where);
  return spec;
}

}  // namespace

RawConfig parse_raw(const json& value) {
  RawConfig raw;
  if (value.is_null()) return raw;
  if (!value.is_object())
    throw ConfigError(std::string("Invalid diffusion attention config: expected a JSON object "
                                  "{\"default\": SPEC, \"per_role\": {ROLE: SPEC}}, got ") + value.type_name() + ".");
  for (const auto& [key, item] : value.items()) {
    if (key == "default") {
      if (!item.is_null()) raw.default_spec = parse_default(item);
    } else if (key == "per_role") {
      if (item.is_null()) continue;
      if (!item.is_object())
        throw ConfigError(std::string("Invalid diffusion attention config: 'per_role' must be an object "
                                      "mapping role to spec, got ") + item.type_name() + ".");
      for (const auto& [role, spec] : item.items()) parse_role(raw, role, spec);
    } else {
      throw ConfigError("Unknown key '" + key + "' in diffusion attention config: expected 'default' or 'per_role'.");
    }
  }
  return raw;
}

AttentionConfig finalize(const RawConfig& raw) {
  AttentionConfig config;
  if (raw.default_spec) config.default_spec = finalize_spec(*raw.default_spec, "Invalid default spec", "default");
  for (const auto& [role, spec] : raw.per_role)
    if (auto done = finalize_spec(spec, "Invalid " + role_where(role), "role '" + role + "'"))
      config.per_role.emplace(role, std::move(*done));
  return config;
}

namespace {

// A parser callback refusing nesting past kMaxConfigDepth (depth counts the enclosing levels) and a key given
// twice in one object (the parser would keep the last in silence: a typo must never be ignored).
json::parser_callback_t depth_limit(std::string_view what) {
  auto keys = std::make_shared<std::vector<std::set<std::string>>>();  // the open objects' keys
  return [what = std::string(what), keys](int depth, json::parse_event_t event, json& parsed) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= kMaxConfigDepth)
      throw ConfigError("Invalid JSON in " + what + ": nested deeper than " + std::to_string(kMaxConfigDepth) +
                        " levels (a configuration needs a handful: per_role, the role's dotted parts, spec, extra).");
    if (event == json::parse_event_t::object_start) keys->emplace_back();
    if (event == json::parse_event_t::object_end && !keys->empty()) keys->pop_back();
    if (event == json::parse_event_t::key && !keys->empty() && !keys->back().insert(parsed.get<std::string>()).second)
      throw ConfigError("Invalid JSON in " + what + ": key '" + parsed.get<std::string>() +
                        "' is given twice in one object.");
    return true;
  };
}

}  // namespace

json parse_json_or_text(const std::string& text, std::string_view what) {
  json parsed = json::parse(text, depth_limit(what), /*allow_exceptions=*/false);
  return parsed.is_discarded() ? json(text) : parsed;
}

json parse_json_text(std::string_view text, std::string_view what) {
  try {
    return json::parse(text, depth_limit(what));
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number past double's range
    // Drop nlohmann's "[json.exception.parse_error.101] " tag; keep its line/column and reason.
    std::string reason = e.what();
    if (auto tag = reason.find("] "); reason.rfind("[json.exception.", 0) == 0 && tag != std::string::npos)
      reason.erase(0, tag + 2);
    for (char& c : reason)
      if (c == '\n' || c == '\r') c = ' ';
    throw ConfigError("Invalid JSON in " + std::string(what) + ": " + reason);
  }
}

}  // namespace config_detail

AttentionConfig AttentionConfig::from_json(const nlohmann::json& value) {
  return config_detail::finalize(config_detail::parse_raw(value));
}

AttentionConfig AttentionConfig::from_json_string(std::string_view text) {
  return from_json(config_detail::parse_json_text(text, "diffusion attention config"));
}

AttentionConfig AttentionConfig::normalized() const {
  // A config built in C++ goes through the same finalize step as JSON, so both obey the same rules.
  config_detail::RawConfig raw;
  auto to_raw = [](const AttentionSpec& spec, const std::string& where) {
    if (!spec.extra.is_object() && !spec.extra.is_null())
      throw ConfigError(where + ": 'extra' must be an object, got " + spec.extra.type_name() + ".");
    return config_detail::RawSpec{spec.backend, spec.extra.is_null() ? nlohmann::json::object() : spec.extra};
  };
  if (default_spec) raw.default_spec = to_raw(*default_spec, "Invalid default spec");
  for (const auto& [role, spec] : per_role) {
    config_detail::check_role_name(role);
    raw.per_role.emplace(role, to_raw(spec, "Invalid per_role entry for role '" + role + "'"));
  }
  return config_detail::finalize(raw);
}

nlohmann::json AttentionConfig::to_json() const {
  // The full form (every spec an object, roles flat): from_json(to_json()) gives the config back.
  auto spec_json = [](const AttentionSpec& s) { return nlohmann::json{{"backend", s.backend}, {"extra", s.extra}}; };
  nlohmann::json out{{"default", nullptr}, {"per_role", nlohmann::json::object()}};
  if (default_spec) out["default"] = spec_json(*default_spec);
  for (const auto& [role, spec] : per_role) out["per_role"][role] = spec_json(spec);
  return out;
}

}  // namespace dattn
