#pragma once
// WanTimeTextImageEmbedding (text-to-video part): sinusoidal timestep embedding -> time MLP (temb) ->
// SiLU -> 6-way time projection, and the text projection. Timesteps are embedded once per distinct
// value: a per-token timestep (TI2V) has B*S entries but only a few distinct values.
#include <cstdint>
#include <vector>

#include "dattn/core/tensor.h"
#include "dattn/models/wan/config.h"
#include "models/wan/capture.h"
#include "models/wan/weights.h"

namespace dattn::wan {

struct Conditioning {
  Tensor temb;                             // [R, D], run dtype: one row per distinct timestep
  Tensor timestep_proj;                    // [R, 6 D], run dtype
  std::vector<std::int32_t> row_of_token;  // B*S entries: the row of each (batch item, token)
  Tensor text;                             // [B, L, D], run dtype
};

// timesteps: B values (one per batch item) or B*S values (per token), as given by the caller.
// Captures condition_embedder.{temb, timestep_proj, text} in diffusers' layouts.
Conditioning condition(const Weights& w, const WanTransformerConfig& config, const std::vector<double>& timesteps,
                       bool per_token, std::int64_t batch, std::int64_t tokens, const Tensor& text,
                       const Capture& capture);

// Rows [R, X] expanded to one row per entry of `rows` and reshaped to `shape` (for captures).
Tensor expand_rows(const Tensor& table, const std::vector<std::int32_t>& rows, const Shape& shape);

}  // namespace dattn::wan
