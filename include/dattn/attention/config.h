#pragma once
// Attention configuration (spec section 3): which backend runs by default and per role, with each
// backend's `extra` parameters. Built in C++, from JSON (the "plain dict"), from command-line flags and
// from the DIFFUSION_ATTENTION_BACKEND environment variable. Validated when read, never at first use.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace dattn {

struct AttentionSpec {
  std::string backend;                              // canonical name once normalised
  nlohmann::json extra = nlohmann::json::object();  // validated against the backend's keys
  bool operator==(const AttentionSpec&) const = default;
};

struct AttentionConfig {
  std::optional<AttentionSpec> default_spec;     // unset: the environment or platform decides
  std::map<std::string, AttentionSpec> per_role;  // role (dots for nested roles) -> spec

  // From the plain dict {"default": SPEC, "per_role": {ROLE: SPEC...}}: normalised and validated.
  // Throws ConfigError with the spec's messages.
  static AttentionConfig from_json(const nlohmann::json& value);
  static AttentionConfig from_json_string(std::string_view text);
  // Normalise a config built field by field: canonical names, extras validated. Throws ConfigError.
  AttentionConfig normalized() const;
  nlohmann::json to_json() const;
  bool operator==(const AttentionConfig&) const = default;
};

// The attention flags of one command line, as given (before merging).
struct AttentionFlags {
  std::optional<std::string> backend_shorthand;  // --diffusion-attention-backend NAME
  std::optional<std::string> config_json;        // --diffusion-attention-config / -dac JSON
  // --diffusion-attention-config.PATH VALUE, in command-line order; PATH without the prefix,
  // e.g. "per_role.ltx2.audio_to_video.backend".
  std::vector<std::pair<std::string, std::string>> dotted;
  bool empty() const { return !backend_shorthand && !config_json && dotted.empty(); }
};

// Removes the attention flags from args (both "--flag VALUE" and "--flag=VALUE") and returns them.
// args excludes the program name. A flag without its value is a ConfigError.
AttentionFlags extract_attention_flags(std::vector<std::string>& args);

// Merges the flags (JSON blob first, dotted flags on top, the shorthand as the default backend) and
// normalises the result. Throws ConfigError (mutual exclusivity, malformed JSON, bad paths...).
AttentionConfig config_from_flags(const AttentionFlags& flags);

// The backend named by DIFFUSION_ATTENTION_BACKEND; nullopt when unset, empty or auto. An unknown name
// is a ConfigError naming the variable.
std::optional<AttentionSpec> env_default_spec(const char* value);
std::optional<AttentionSpec> env_default_spec_from_environment();

// Everything selection needs: the explicit config and the environment's default.
struct AttentionSettings {
  AttentionConfig config;
  std::optional<AttentionSpec> env_default;
};

// The settings of one command line: flags merged, environment read. Throws ConfigError.
AttentionSettings settings_from_command_line(const AttentionFlags& flags);

}  // namespace dattn
