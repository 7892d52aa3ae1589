#pragma once
// The text stage's output checked where it is produced: NaN or Inf in the prompt embeddings reached every
// denoising step and was blamed on the transformer. One reduction per prompt and encoder.
#include <string>

#include "dattn/core/error.h"
#include "dattn/core/tensor.h"
#include "dattn/ops/finite.h"

namespace dattn::pipeline {

// NumericError unless `embeds` (what `encoder` wrote for the `prompt_kind`, as the transformer gets it) is
// finite. `encoder` names the model and its folder, e.g. "the text encoder (umT5, text_encoder/)".
inline void check_text_embeddings(const Tensor& embeds, const std::string& encoder, const std::string& prompt_kind) {
  const ops::NonFinite bad = ops::count_nonfinite(embeds);
  if (bad.count == 0) return;
  throw NumericError(encoder + " produced non-finite embeddings of the " + prompt_kind + " (" +
                     std::to_string(bad.nan) + " NaN and " + std::to_string(bad.count - bad.nan) + " Inf of " +
                     std::to_string(embeds.numel()) + " values), before any denoising step; likely causes: its "
                     "weights hold NaN, Inf or huge values (a corrupt or mis-converted checkpoint) or its activations "
                     "overflow the run dtype (try --dtype bf16 or fp32). Nothing was written.");
}

}  // namespace dattn::pipeline
