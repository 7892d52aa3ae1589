// WanTransformerBlock (see block.h). The order of operations and the float32 points follow diffusers:
// the modulation (scale_shift_table + timestep projection), the norms and the gated residual adds are
// float32; their results are cast back to the run dtype.
#include "models/wan/block.h"

#include <utility>

#include "dattn/models/attention_roles.h"
#include "dattn/ops/ops.h"
#include "models/wan/row_parallel.h"

namespace dattn::wan {
namespace {

// Index of each vector in the 6-way modulation: shift, scale, gate for attention, then for the FFN.
enum : int { kShiftMsa = 0, kScaleMsa, kGateMsa, kShiftFfn, kScaleFfn, kGateFfn };

}  // namespace

Block::Block(std::int64_t index, const WanTransformerConfig& config, const AttentionSettings& settings, DType dtype,
             Device device, const std::shared_ptr<parallel::Communicator>& ulysses,
             const std::shared_ptr<parallel::Communicator>& tensor_parallel)
    : prefix_("blocks." + std::to_string(index)),
      eps_(static_cast<float>(config.eps)),
      attn1_(prefix_ + ".attn1", find_role(wan_attention_roles(config, dtype), "self"), eps_, settings, device, ulysses,
             tensor_parallel),
      attn2_(prefix_ + ".attn2", find_role(wan_attention_roles(config, dtype), "cross"), eps_, settings, device,
             nullptr, tensor_parallel),
      tp_(tensor_parallel && tensor_parallel->size() > 1 ? tensor_parallel : nullptr) {}

Tensor Block::forward(const BlockWeights& w, const Tensor& x, const Tensor& text, const Tensor& timestep_proj,
                      const std::vector<std::int32_t>& row_of_token, const RopeTables& rope,
                      const Capture& capture) const {
  const std::int64_t d = x.dim(-1);
  // [R, 6, D] float32: the block's table plus each distinct timestep's projection.
  ops::TokenModulation mod{ops::add(timestep_proj.reshape({-1, 6, d}), w.scale_shift_table, DType::F32),
                           row_of_token};

  Tensor h = ops::layer_norm_modulated(x, eps_, mod, kShiftMsa, kScaleMsa);
  Tensor attn = attn1_.forward(w.attn1, h, h, &rope, capture, prefix_ + ".attn_self");
  capture(prefix_ + ".attn1.out", attn);
  // The self-attention's gated residual and norm2 (when the block has one) in one pass.
  Tensor hidden;
  if (w.norm2_weight.defined()) {
    ops::ResidualAndNorm r = ops::residual_layer_norm(x, attn, &mod, kGateMsa, eps_, w.norm2_weight, w.norm2_bias);
    hidden = std::move(r.residual);
    h = std::move(r.normed);
  } else {
    hidden = ops::gated_residual(x, attn, mod, kGateMsa);
    h = hidden;
  }
  attn = attn2_.forward(w.attn2, h, text, nullptr, capture, prefix_ + ".attn_cross");
  capture(prefix_ + ".attn2.out", attn);
  // The cross-attention's residual and the FFN's norm in one pass.
  ops::ResidualAndNorm r = ops::residual_layer_norm_modulated(hidden, attn, nullptr, 0, eps_, mod, kShiftFfn, kScaleFfn);
  hidden = std::move(r.residual);
  h = std::move(r.normed);
  // Tensor parallel: this rank's FFN columns (the GELU is per column), summed over the group after ffn_out.
  Tensor ff = tp_ ? apply_row_parallel(tp_.get(), w.ffn_out, apply_gelu_tanh(w.ffn_in, h))
                 : apply_feed_forward(w.ffn_in, w.ffn_out, h);
  capture(prefix_ + ".ffn.out", ff);
  hidden = ops::gated_residual(hidden, ff, mod, kGateFfn);
  capture(prefix_ + ".out", hidden);
  return hidden;
}

}  // namespace dattn::wan
