// DIFFUSION_ATTENTION_BACKEND: the environment's default backend, used only when no explicit default
// was configured (the selector decides that; this file only reads and validates the variable).
#include <cstdlib>
#include <string>

#include "attention/config/config_raw.h"
#include "dattn/attention/config.h"
#include "dattn/attention/registry.h"
#include "dattn/core/error.h"

namespace dattn {
namespace {

constexpr const char* kEnvVar = "DIFFUSION_ATTENTION_BACKEND";

}  // namespace

std::optional<AttentionSpec> env_default_spec(const char* value) {
  if (value == nullptr || *value == '\0' || config_detail::is_auto(value)) return std::nullopt;
  const AttentionBackend* backend = find_backend(value);
  if (backend == nullptr)
    throw ConfigError("Unknown diffusion attention backend in environment variable " + std::string(kEnvVar) +
                      ": '" + value + "'. Valid options are: " + backend_name_list() + ", or auto");
  return AttentionSpec{std::string(backend->name()), nlohmann::json::object()};
}

std::optional<AttentionSpec> env_default_spec_from_environment() { return env_default_spec(std::getenv(kEnvVar)); }

AttentionSettings settings_from_command_line(const AttentionFlags& flags) {
  // The variable is validated even when an explicit default will win: a typo there is still a typo.
  return AttentionSettings{config_from_flags(flags), env_default_spec_from_environment()};
}

}  // namespace dattn
