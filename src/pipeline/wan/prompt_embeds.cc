// The pipeline side of the text encoder: diffusers keeps each prompt's first n tokens and zero-fills
// the rest (n = its attention mask's count), whatever the encoder wrote at padding positions.
#include "dattn/core/error.h"
#include "dattn/pipeline/wan/prompt_embeds.h"
#include "dattn/ops/elementwise.h"
#include "dattn/text/tokenizer.h"

namespace dattn {

Tensor zero_after_lengths(const Tensor& embeds, const std::vector<std::int64_t>& attention_mask) {
  if (embeds.ndim() != 3 || static_cast<std::int64_t>(attention_mask.size()) != embeds.dim(0) * embeds.dim(1))
    throw UserError("zero_after_lengths: embeds " + embeds.describe() + " and an attention mask of " +
                    std::to_string(attention_mask.size()) + " entries do not match ([B, S, D] and B*S)");
  const std::int64_t batch = embeds.dim(0), seq = embeds.dim(1);
  std::vector<float> keep(batch * seq, 0.0f);
  for (std::int64_t b = 0; b < batch; ++b) {
    std::int64_t n = 0;
    for (std::int64_t i = 0; i < seq; ++i) n += attention_mask[b * seq + i] != 0;
    std::fill(keep.begin() + b * seq, keep.begin() + b * seq + n, 1.0f);
  }
  // A 0/1 multiply runs on any device; only a non-finite padding value would survive it (as NaN),
  // and the encoder writes finite values everywhere.
  return ops::mul(embeds, Tensor::from_f32(keep, {batch, seq, 1}).to(embeds.device()));
}

Tensor encode_prompt(const Umt5Encoder& encoder, const TokenizedBatch& tokens) {
  const Tensor embeds = encoder.encode(tokens.input_ids, tokens.attention_mask, tokens.batch, tokens.length);
  return zero_after_lengths(embeds, tokens.attention_mask);
}

}  // namespace dattn
