#pragma once
// The adaLN parameters of HunyuanVideo-1.5's blocks: one row of K vectors per batch item, each token
// reading its item's row.
#include <cstdint>
#include <string>

#include "dattn/ops/modulation.h"
#include "models/hunyuanvideo15/capture.h"
#include "models/hunyuanvideo15/weights.h"

namespace dattn::hv15 {

// linear(silu_temb) [B, K * D] as float32 [B, K, D], with row b for the tokens of item b of a
// [B, tokens, D] stream.
ops::TokenModulation batch_modulation(const Tensor& silu_temb, const Linear& linear, std::int64_t k,
                                      std::int64_t tokens);
// The same parameters for another stream length (the rows are shared).
ops::TokenModulation with_tokens(const ops::TokenModulation& m, std::int64_t batch, std::int64_t tokens);

// Captures vector k of every row ([B, D]) as `name`.
void capture_vector(const Capture& capture, const std::string& name, const ops::TokenModulation& m, int k);

}  // namespace dattn::hv15
