// Backend resolution for a layer's (role, category) (spec section 4), and its once-only log line.
#include "dattn/attention/selector.h"

#include <cstdio>
#include <mutex>
#include <set>
#include <tuple>

#include "dattn/attention/registry.h"
#include "dattn/core/error.h"

namespace dattn {
namespace {

Resolution from_spec(const std::string& role, const std::optional<std::string>& category, const AttentionSpec& spec,
                     std::string source) {
  // Canonicalise here too: settings built by hand may hold "sdpa"; an unknown name throws the usual error.
  const AttentionBackend& backend = backend_by_name(spec.backend);
  return Resolution{role, category, std::string(backend.name()), spec.extra, std::move(source)};
}

std::string category_text(const std::optional<std::string>& category) {
  return category ? "role_category='" + *category + "'" : "role_category=None";
}

// Why neither platform candidate can run the shape: each one's own support reason.
[[noreturn]] void no_platform_default(const std::string& role, const std::optional<std::string>& category,
                                      const AttentionShape& shape, Device device) {
  std::string reasons;
  for (const char* name : {"FLASH_ATTN", "TORCH_SDPA"}) {
    const AttentionBackend* backend = find_backend(name);
    const std::string why = backend ? backend->supports(shape, device).reason : "not registered in this build";
    reasons += (reasons.empty() ? "" : "; ") + std::string(name) + ": " + why;
  }
  throw ConfigError("No platform default diffusion attention backend can run role '" + role + "' (" +
                    category_text(category) + ") on " + std::string(device_name(device)) + " for " +
                    shape.describe() + " (" + reasons + "). Configure a backend that supports it explicitly.");
}

}  // namespace

Resolution resolve_attention(const AttentionSettings& settings, const std::string& role,
                             const std::optional<std::string>& category, const AttentionShape& shape,
                             Device device) {
  const auto& per_role = settings.config.per_role;
  if (auto it = per_role.find(role); it != per_role.end())
    return from_spec(role, category, it->second, "per_role['" + role + "']");
  if (category) {
    if (auto it = per_role.find(*category); it != per_role.end())
      return from_spec(role, category, it->second, "per_role['" + *category + "'] (role_category fallback)");
  }
  if (settings.config.default_spec) return from_spec(role, category, *settings.config.default_spec, "default");
  if (settings.env_default)
    return from_spec(role, category, *settings.env_default, "env DIFFUSION_ATTENTION_BACKEND");
  const AttentionBackend* backend = platform_default_backend(shape, device);
  if (backend == nullptr) no_platform_default(role, category, shape, device);
  return Resolution{role, category, std::string(backend->name()), nlohmann::json::object(), "platform default"};
}

std::string resolution_log_line(const Resolution& r) {
  return "Resolved diffusion attention backend '" + r.backend + "' for role='" + r.role + "' (" +
         category_text(r.category) + ") via " + r.source;
}

bool log_resolution_once(const Resolution& r) {
  // Models build many layers of one role; one line per distinct outcome is enough.
  static std::mutex mutex;
  static std::set<std::tuple<std::string, std::string, std::string>> logged;
  std::lock_guard<std::mutex> lock(mutex);
  if (!logged.emplace(r.role, r.backend, r.source).second) return false;
  std::fprintf(stderr, "[dattn] INFO %s\n", resolution_log_line(r).c_str());
  return true;
}

}  // namespace dattn
