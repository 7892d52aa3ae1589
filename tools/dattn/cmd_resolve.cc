// dattn resolve: which backend each role resolves to, and why (spec section 5).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dattn/attention/selector.h"
#include "dattn/command.h"
#include "dattn/core/error.h"
#include "dattn/device_option.h"
#include "dattn/models/attention_roles.h"
#include "dattn/shape_option.h"

namespace dattn::tool {
namespace {

struct ResolveOptions {
  std::vector<std::string> roles;
  std::string device = "cpu";
  std::string shape;  // B,Sq,Sk,H,D; empty: the reference shape (Wan2.2-5B self-attention)
  bool json = false;
};

// "ROLE[:CATEGORY]"; without a category the roles the model families declare decide.
std::pair<std::string, std::optional<std::string>> split_role(const std::string& text) {
  const auto colon = text.rfind(':');
  std::string role = colon == std::string::npos ? text : text.substr(0, colon);
  if (role.empty()) throw UserError("--role '" + text + "': the role name is empty; expected ROLE or ROLE:CATEGORY");
  if (colon == std::string::npos) return {role, known_role_category(role)};
  std::string category = text.substr(colon + 1);
  if (category.empty())
    throw UserError("--role '" + text + "': the category after ':' is empty; expected ROLE:CATEGORY");
  return {role, category};
}

int run_resolve(const ResolveOptions& o, const CommandContext& ctx) {
  const Device device = device_from_option(o.device);
  const AttentionSettings settings = settings_from_command_line(ctx.attention_flags);
  const AttentionShape shape = nominal_shape_option(o.shape, device);
  std::vector<std::string> roles = o.roles.empty() ? std::vector<std::string>{"self", "cross"} : o.roles;
  std::vector<Resolution> out;
  for (const auto& text : roles) {
    auto [role, category] = split_role(text);
    out.push_back(resolve_attention(settings, role, category, shape, device));
  }
  // Nothing is printed until every role resolved: an error leaves standard output empty.
  if (o.json) {
    nlohmann::ordered_json arr = nlohmann::ordered_json::array();
    for (const auto& r : out) {
      nlohmann::ordered_json e;
      e["role"] = r.role;
      e["role_category"] = r.category ? nlohmann::ordered_json(*r.category) : nlohmann::ordered_json(nullptr);
      e["backend"] = r.backend;
      e["extra"] = nlohmann::ordered_json::parse(r.extra.dump());
      e["source"] = r.source;
      arr.push_back(e);
    }
    std::printf("%s\n", arr.dump().c_str());
    return 0;
  }
  for (const auto& r : out)
    // One line per role; source last because it contains spaces (it runs to the end of the line).
    std::printf("role=%s role_category=%s backend=%s extra=%s source=%s\n", r.role.c_str(),
                r.category ? r.category->c_str() : "None", r.backend.c_str(), r.extra.dump().c_str(),
                r.source.c_str());
  return 0;
}

}  // namespace

Command add_resolve_command(CLI::App& root) {
  auto opts = std::make_shared<ResolveOptions>();
  CLI::App* app = root.add_subcommand("resolve", "Show which attention backend each role resolves to, and from where");
  app->add_option("--role", opts->roles,
                  "Role to resolve, ROLE or ROLE:CATEGORY (repeatable; default: self and cross). Without a "
                  "category, known model roles take theirs from the built-in table")
      ->type_name("ROLE[:CATEGORY]");
  app->add_option("--device", opts->device, "Device the platform default is chosen for: cpu or cuda")
      ->capture_default_str();
  app->add_option("--shape", opts->shape,
                  "Problem size B,Sq,Sk,H,D the platform default is chosen for (default: Wan2.2-5B "
                  "self-attention, 1,11440,11440,24,128)");
  app->add_flag("--json", opts->json, "Print one JSON array: role, role_category, backend, extra, source");
  document_attention_flags(*app);
  return {app, true, [opts](const CommandContext& ctx) { return run_resolve(*opts, ctx); }};
}

}  // namespace dattn::tool
