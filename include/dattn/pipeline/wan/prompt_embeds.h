#pragma once
// The Wan pipeline's text step around the umT5 encoder (diffusers' _get_t5_prompt_embeds).
#include <cstdint>
#include <vector>

#include "dattn/models/umt5.h"
#include "dattn/text/tokenizer.h"

namespace dattn {

// Keeps each prompt's first n token embeddings and zero-fills the rest (n = its attention mask's count),
// whatever the encoder wrote at padding positions. embeds [B, S, D], attention_mask B*S entries.
Tensor zero_after_lengths(const Tensor& embeds, const std::vector<std::int64_t>& attention_mask);

// Tokens through the encoder, then zero_after_lengths: the pipeline's prompt_embeds [B, S, d_model].
Tensor encode_prompt(const Umt5Encoder& encoder, const TokenizedBatch& tokens);

}  // namespace dattn
