// wan_attention_resolutions: what the transformer's attention layers resolve to, for the run summary.
#include "pipeline/wan_t2v/stages.h"

namespace dattn::wan_t2v {

std::vector<Resolution> wan_attention_resolutions(const WanTransformerConfig& config, const WanRunSettings& settings) {
  // The same nominal problem the Wan attention layers resolve for at build time (src/models/wan/
  // attention.cc): a 1024-token video and 512 text tokens; only dtype, heads and head dim matter.
  std::vector<Resolution> out;
  for (const char* role : {"self", "cross"}) {
    AttentionShape shape;
    shape.seq_q = 1024;
    shape.seq_k = std::string(role) == "cross" ? 512 : 1024;
    shape.heads_q = shape.heads_kv = config.num_attention_heads;
    shape.head_dim = config.attention_head_dim;
    shape.dtype = settings.dtype;
    out.push_back(resolve_attention(settings.attention, role, std::nullopt, shape, settings.device));
  }
  return out;
}

}  // namespace dattn::wan_t2v
