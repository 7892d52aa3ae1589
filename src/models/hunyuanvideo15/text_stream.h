#pragma once
// The text stream the blocks see: the refined Qwen tokens, the projected ByT5 tokens and (I2V) the
// projected image tokens, each plus its cond_type_embed row, packed per batch item as [image, ByT5, Qwen]
// valid tokens (diffusers' order) and padded to the longest item. Only valid tokens are computed.
#include <memory>
#include <vector>

#include "dattn/models/hunyuanvideo15/transformer.h"
#include "models/hunyuanvideo15/capture.h"
#include "models/hunyuanvideo15/refiner.h"
#include "models/hunyuanvideo15/weights.h"

namespace dattn::hv15 {

struct TextStream {
  Tensor tokens;                     // [B, T, D] in the run dtype
  std::vector<std::int64_t> valid;   // valid tokens of each item (the first ones of its row)
  std::int64_t packed_length = 0;    // diffusers' packed length: image + ByT5 + Qwen rows, valid or not
};

// The 0/1 mask [B, prefix + packed_length] diffusers builds for the packed stream (valid tokens first),
// after `prefix` always-valid rows (the video tokens for the joint attention's key mask): for captures.
Tensor packed_mask(const TextStream& s, std::int64_t prefix);

// The inputs converted to the run dtype on the run device; `timestep` [B] float64 as the forward got it.
TextStream text_stream(const Weights& w, const HunyuanVideo15TransformerConfig& config,
                       const std::vector<std::unique_ptr<RefinerBlock>>& refiner, const Hv15TextInputs& in,
                       const Tensor& timestep, DType dtype, Device device, const Capture& capture);

// SiLU(TimestepEmbedding(sinusoidal(t))) pieces: the [B, D] embedding of `timestep` ([B] float64) through
// linear_1, SiLU, linear_2, with the sinusoidal part cast to `dtype` first as diffusers does.
Tensor timestep_embedding(const Tensor& timestep, const Linear& l1, const Linear& l2, DType dtype, Device device);

}  // namespace dattn::hv15
