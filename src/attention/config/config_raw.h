#pragma once
// The attention config as written, before "auto", backend names and extras are resolved. The JSON
// reader and the command-line flags share it so that dotted flags merge onto the JSON blob *before*
// normalisation (a blob's role may get its backend from one flag and an extra key from another).
#include <cctype>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "dattn/attention/config.h"

namespace dattn::config_detail {

struct RawSpec {
  std::optional<std::string> backend;    // as written ("auto", "sdpa"...); absent: only extra given
  std::optional<nlohmann::json> extra;   // an object when present
};

struct RawConfig {
  std::optional<RawSpec> default_spec;
  std::map<std::string, RawSpec> per_role;  // nested roles already flattened with dots
};

// Case-insensitive "auto": the spec's way of saying "unset" (config, flags and the environment).
inline bool is_auto(std::string_view name) {
  if (name.size() != 4) return false;
  for (std::size_t i = 0; i < 4; ++i)
    if (std::tolower(static_cast<unsigned char>(name[i])) != "auto"[i]) return false;
  return true;
}

// Structural checks only (types, unknown keys, nesting, duplicates). Throws ConfigError.
RawConfig parse_raw(const nlohmann::json& value);
// "auto", canonical names, extras validated. Throws ConfigError.
AttentionConfig finalize(const RawConfig& raw);
// Nesting allowed in a configuration's JSON (objects and arrays, the outer object is level 1). A real
// config nests 4-6 levels (per_role, a role's dotted parts, spec, extra); the limit keeps hostile input
// from exhausting the stack of the recursive role reader and of nlohmann's copies.
inline constexpr int kMaxConfigDepth = 32;

// Parses JSON text; a syntax error is a one-line ConfigError "Invalid JSON in WHAT: parse error at ...",
// nesting past kMaxConfigDepth a ConfigError naming the limit.
nlohmann::json parse_json_text(std::string_view text, std::string_view what);
// The same for a dotted flag's VALUE: JSON when it parses as JSON, else the text itself as a string.
nlohmann::json parse_json_or_text(const std::string& text, std::string_view what);

}  // namespace dattn::config_detail
