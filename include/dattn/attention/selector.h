#pragma once
// Resolution of a layer's backend from its role and category (spec section 4).
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "dattn/attention/config.h"
#include "dattn/attention/problem.h"
#include "dattn/core/device.h"

namespace dattn {

struct Resolution {
  std::string role;
  std::optional<std::string> category;
  std::string backend;   // canonical name
  nlohmann::json extra;  // as configured (no defaults filled in)
  std::string source;    // "per_role['self']", "per_role['cross'] (role_category fallback)", "default",
                         // "env DIFFUSION_ATTENTION_BACKEND" or "platform default"
  bool is_explicit() const { return source != "platform default"; }
};

// First match wins: per_role[role], per_role[category], default, environment, platform default.
// The platform default is chosen for `shape` on `device`; when no backend supports it, ConfigError.
Resolution resolve_attention(const AttentionSettings& settings, const std::string& role,
                             const std::optional<std::string>& category, const AttentionShape& shape,
                             Device device);

// "Resolved diffusion attention backend 'X' for role='R' (role_category='C') via SOURCE"; an unset
// category prints as role_category=None.
std::string resolution_log_line(const Resolution& r);
// Logs the line once per (role, backend, source) for the life of the process. Returns whether it logged.
bool log_resolution_once(const Resolution& r);

}  // namespace dattn
