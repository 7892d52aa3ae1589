#pragma once
// adaLN-style modulation with parameters per token. DiT blocks modulate each token with vectors derived
// from its timestep (shift, scale, gate). With a per-token timestep (Wan2.2 TI2V) most tokens share a
// few distinct timesteps, so the parameters are stored once per distinct row and each token names its
// row: a [B*S, 6, D] tensor (843 MB in float32 for Wan2.2-5B at 704x1280) becomes [R, 6, D] with R = 2.
#include <cstdint>
#include <vector>

#include "dattn/core/tensor.h"

namespace dattn::ops {

struct TokenModulation {
  Tensor params;                           // [R, K, D] float32: K vectors of D per row
  std::vector<std::int32_t> row_of_token;  // one entry per token of x (x viewed as [N, D]), in [0, R)
};

// y = layer_norm(x, eps) * (1 + params[row, scale_k]) + params[row, shift_k] for every token; the norm
// has no affine parameters (diffusers' norm1 / norm3 / norm_out). x [..., D]; y has x's shape and dtype.
Tensor layer_norm_modulated(const Tensor& x, float eps, const TokenModulation& m, int shift_k, int scale_k);

// y = h + x * params[row, gate_k] for every token, in float32 (diffusers' gated residual); h and x have
// the same shape [..., D]; y has h's dtype.
Tensor gated_residual(const Tensor& h, const Tensor& x, const TokenModulation& m, int gate_k);

// A gated residual and the modulated norm after it in one pass over the rows (a DiT block between its
// attention and its FFN): residual = gated_residual(h, x, *gate, gate_k), or add(h, x) when gate is null,
// and normed = layer_norm_modulated(residual, eps, norm, shift_k, scale_k); the same values as those ops.
struct ResidualAndNorm {
  Tensor residual, normed;
};
ResidualAndNorm residual_layer_norm_modulated(const Tensor& h, const Tensor& x, const TokenModulation* gate, int gate_k,
                                              float eps, const TokenModulation& norm, int shift_k, int scale_k);

// The same with a plain layer norm after the residual (Wan's norm2 before the cross-attention): residual as
// above, normed = layer_norm(residual, eps, weight, bias) (weight and bias [D], both or neither).
ResidualAndNorm residual_layer_norm(const Tensor& h, const Tensor& x, const TokenModulation* gate, int gate_k, float eps,
                                    const Tensor& weight, const Tensor& bias);

}  // namespace dattn::ops
