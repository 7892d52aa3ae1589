// HunyuanVideo-1.5 prompt embeddings (see include/dattn/models/hunyuanvideo15_text.h).
#include <string>

#include "dattn/core/error.h"
#include "dattn/models/hunyuanvideo15_text.h"

namespace dattn {
namespace {

void check_sizes(const char* who, std::size_t ids, std::size_t mask, std::int64_t batch, std::int64_t seq) {
  if (batch < 1 || seq < 1)
    throw UserError(std::string(who) + ": batch " + std::to_string(batch) + " and seq " + std::to_string(seq) +
                    " must be positive");
  const auto n = static_cast<std::size_t>(batch * seq);
  if (ids != n || mask != n)
    throw UserError(std::string(who) + ": ids has " + std::to_string(ids) + " and mask " + std::to_string(mask) +
                    " entries, expected batch * seq = " + std::to_string(n));
}

}  // namespace

Hv15PromptEmbeds hv15_qwen_prompt_embeds(const Qwen25VLTextEncoder& encoder, const std::vector<std::int64_t>& ids,
                                         const std::vector<std::int64_t>& mask, std::int64_t batch, std::int64_t seq,
                                         std::int64_t crop_start, std::int64_t skip_layers) {
  constexpr const char* who = "HunyuanVideo-1.5 prompt_embeds";
  check_sizes(who, ids.size(), mask.size(), batch, seq);
  if (crop_start < 0 || crop_start >= seq)
    throw UserError(std::string(who) + ": crop_start " + std::to_string(crop_start) + " is outside [0, " +
                    std::to_string(seq) + ")");
  if (skip_layers < 0)
    throw UserError(std::string(who) + ": skip_layers " + std::to_string(skip_layers) + " must be >= 0");
  const Tensor h = encoder.hidden_state(ids, mask, batch, seq, -(skip_layers + 1));
  const std::int64_t kept = seq - crop_start, width = h.dim(2);
  Hv15PromptEmbeds out;
  out.embeds = Tensor::empty({batch, kept, width}, h.dtype(), h.device());
  for (std::int64_t b = 0; b < batch; ++b) {
    out.embeds.narrow0(b, 1).reshape({kept, width}).copy_from(h.narrow0(b, 1).reshape({seq, width}).narrow0(crop_start, kept));
    for (std::int64_t j = crop_start; j < seq; ++j) out.mask.push_back(mask[b * seq + j] != 0 ? 1 : 0);
  }
  return out;
}

Hv15PromptEmbeds hv15_byt5_prompt_embeds(const T5Encoder& encoder, const std::vector<std::int64_t>& ids,
                                         const std::vector<std::int64_t>& mask, std::int64_t batch, std::int64_t seq,
                                         const std::vector<bool>& has_glyph) {
  constexpr const char* who = "HunyuanVideo-1.5 prompt_embeds_2";
  check_sizes(who, ids.size(), mask.size(), batch, seq);
  if (static_cast<std::int64_t>(has_glyph.size()) != batch)
    throw UserError(std::string(who) + ": has_glyph has " + std::to_string(has_glyph.size()) +
                    " entries, expected one per prompt (" + std::to_string(batch) + ")");
  const std::int64_t width = encoder.config().d_model;
  const Umt5RunOptions& o = encoder.options();
  Hv15PromptEmbeds out;
  out.embeds = Tensor::zeros({batch, seq, width}, o.dtype, o.device);
  out.mask.assign(static_cast<std::size_t>(batch * seq), 0);
  // One encoder call per prompt with glyph text, as the pipeline runs them (batch items are independent).
  for (std::int64_t b = 0; b < batch; ++b) {
    if (!has_glyph[b]) continue;
    const std::vector<std::int64_t> row_ids(ids.begin() + b * seq, ids.begin() + (b + 1) * seq);
    const std::vector<std::int64_t> row_mask(mask.begin() + b * seq, mask.begin() + (b + 1) * seq);
    out.embeds.narrow0(b, 1).copy_from(encoder.encode(row_ids, row_mask, 1, seq));
    for (std::int64_t j = 0; j < seq; ++j) out.mask[b * seq + j] = row_mask[j] != 0 ? 1 : 0;
  }
  return out;
}

}  // namespace dattn
