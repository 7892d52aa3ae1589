#pragma once
// HunyuanVideo-1.5's prompt embeddings from its two text encoders, as diffusers' encode_prompt makes
// them from token ids (tokenizing is not done here):
//  - prompt_embeds: Qwen2.5-VL's hidden_states[-(skip_layers + 1)] over the chat-template input, rows
//    from crop_start on (the template's system prefix is dropped), and the attention mask cropped alike.
//    Padded rows are kept as computed, not zeroed (as diffusers keeps them).
//  - prompt_embeds_2: the ByT5 encoder's last hidden state over the glyph text ids, per prompt; a prompt
//    without glyph (quoted) text gets zero embeddings and an all-zero mask and does not run the encoder:
//    that is the pipeline's rule, the caller says which prompts have glyph text.
#include <cstdint>
#include <vector>

#include "dattn/core/tensor.h"
#include "dattn/models/qwen2_5_vl.h"
#include "dattn/models/umt5.h"

namespace dattn {

struct Hv15PromptEmbeds {
  Tensor embeds;                    // [batch, seq, width] in the encoder's run dtype and device
  std::vector<std::int64_t> mask;   // [batch * seq], 1 = a real token
};

// ids and mask [batch, seq] (seq = crop_start + tokenizer_max_length: 108 + 1000 for the real model).
// Returns [batch, seq - crop_start, hidden]. UserError when crop_start is not in [0, seq).
Hv15PromptEmbeds hv15_qwen_prompt_embeds(const Qwen25VLTextEncoder& encoder, const std::vector<std::int64_t>& ids,
                                         const std::vector<std::int64_t>& mask, std::int64_t batch, std::int64_t seq,
                                         std::int64_t crop_start, std::int64_t skip_layers = 2);

// ids and mask [batch, seq] (seq = tokenizer_2_max_length, 256); has_glyph[b] false: row b is zeros with
// an all-zero mask whatever its ids. Returns [batch, seq, d_model].
Hv15PromptEmbeds hv15_byt5_prompt_embeds(const T5Encoder& encoder, const std::vector<std::int64_t>& ids,
                                         const std::vector<std::int64_t>& mask, std::int64_t batch, std::int64_t seq,
                                         const std::vector<bool>& has_glyph);

}  // namespace dattn
