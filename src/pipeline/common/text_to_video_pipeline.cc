// The non-template part of TextToVideoPipeline (see text_to_video_pipeline.h).
#include "pipeline/common/text_to_video_pipeline.h"

#include "dattn/attention/selector.h"

namespace dattn::pipeline {

std::vector<Resolution> resolve_roles(const AttentionSettings& settings, const std::vector<AttentionRoleDecl>& roles,
                                      const std::string& model, Device device) {
  check_per_role_keys(settings.config, roles, model);
  std::vector<Resolution> out;
  for (const AttentionRoleDecl& role : roles)
    out.push_back(resolve_attention(settings, role.role, role.category, role.nominal, device));
  return out;
}

}  // namespace dattn::pipeline
