// Lookups over the roles the model families declare (see dattn/models/attention_roles.h).
#include <algorithm>

#include "dattn/core/edit_distance.h"
#include "dattn/core/error.h"
#include "dattn/models/attention_roles.h"
#include "dattn/models/qwen2_5_vl.h"

namespace dattn {

std::optional<std::string> known_role_category(const std::string& role) {
  // The families whose roles carry a category (Wan's roles are categories themselves). Lengths, dtype
  // and geometry do not matter for the category.
  for (const AttentionRoleDecl& d : ltx2_attention_roles(DType::F32))
    if (d.role == role) return d.category;
  for (const AttentionRoleDecl& d : hunyuanvideo15_attention_roles(hunyuanvideo15_480p_t2v_config(), DType::F32))
    if (d.role == role) return d.category;
  if (role == kQwenTextEncoderRole) return std::string("self");  // Qwen2.5-VL's, whatever its config
  return std::nullopt;
}

const AttentionRoleDecl& find_role(const std::vector<AttentionRoleDecl>& decls, const std::string& role) {
  std::string declared;
  for (const AttentionRoleDecl& d : decls) {
    if (d.role == role) return d;
    declared += (declared.empty() ? "'" : ", '") + d.role + "'";
  }
  throw ConfigError("attention role '" + role + "' is not declared; expected one of " +
                    (declared.empty() ? std::string("(none)") : declared));
}

void check_per_role_keys(const AttentionConfig& config, const std::vector<AttentionRoleDecl>& decls,
                         const std::string& model) {
  std::vector<std::string> names;
  for (const AttentionRoleDecl& d : decls) {
    names.push_back(d.role);
    if (d.category && std::find(names.begin(), names.end(), *d.category) == names.end()) names.push_back(*d.category);
  }
  for (const auto& [key, spec] : config.per_role) {
    (void)spec;
    if (std::find(names.begin(), names.end(), key) != names.end()) continue;
    std::string declared;
    for (const std::string& n : names) declared += (declared.empty() ? "'" : ", '") + n + "'";
    const std::string near = closest_name(key, names);
    throw ConfigError("per_role key '" + key + "' matches no attention role of " + model +
                      (near.empty() ? std::string() : "; did you mean '" + near + "'?") + " (its roles: " + declared +
                      ")");
  }
}

}  // namespace dattn
