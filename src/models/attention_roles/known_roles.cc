// Lookups over the roles the model families declare (see dattn/models/attention_roles.h).
#include "dattn/core/error.h"
#include "dattn/models/attention_roles.h"

namespace dattn {

std::optional<std::string> known_role_category(const std::string& role) {
  // The families whose roles carry a category; Wan's and HunyuanVideo-1.5's roles are categories
  // themselves. Lengths and dtype do not matter for the category.
  for (const AttentionRoleDecl& d : ltx2_attention_roles(DType::F32))
    if (d.role == role) return d.category;
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

}  // namespace dattn
