// The token refiner block (see refiner.h). LayerNorms here are affine with eps 1e-6 (diffusers).
#include "models/hunyuanvideo15/refiner.h"

#include "dattn/models/attention_roles.h"
#include "dattn/ops/ops.h"
#include "models/hunyuanvideo15/attention_call.h"
#include "models/hunyuanvideo15/modulation.h"

namespace dattn::hv15 {

RefinerBlock::RefinerBlock(std::int64_t index, const HunyuanVideo15TransformerConfig& config,
                           const AttentionSettings& settings, DType dtype, Device device)
    : prefix_("context_embedder.token_refiner.refiner_blocks." + std::to_string(index)),
      heads_(config.num_attention_heads),
      head_dim_(config.attention_head_dim) {
  const auto roles = hunyuanvideo15_attention_roles(config, dtype);  // find_role returns into it
  const AttentionRoleDecl& decl = find_role(roles, "hunyuanvideo15.refiner");
  layer_ = std::make_unique<AttentionLayer>(prefix_ + ".attn", decl.role, decl.category, settings, decl.nominal, device);
}

Tensor RefinerBlock::forward(const RefinerBlockWeights& w, const Tensor& x, const Tensor& silu_temb,
                             const std::vector<std::int64_t>& counts, const Capture& capture) const {
  constexpr float kEps = 1e-6f;
  const std::int64_t b = x.dim(0), n = x.dim(1), d = x.dim(2);
  const Tensor h = ops::layer_norm(x, kEps, w.norm1.weight, w.norm1.bias);
  const Shape heads{b, n, heads_, head_dim_};
  const Tensor q = ops::linear(h, w.to_q.weight, w.to_q.bias).reshape(heads);
  const Tensor k = ops::linear(h, w.to_k.weight, w.to_k.bias).reshape(heads);
  const Tensor v = ops::linear(h, w.to_v.weight, w.to_v.bias).reshape(heads);
  Tensor attn = attend(*layer_, q, k, v, counts).reshape({b, n, d});
  attn = ops::linear(attn, w.to_out.weight, w.to_out.bias);
  capture(prefix_ + ".attn.out", attn);

  const ops::TokenModulation gates = batch_modulation(silu_temb, w.ada, 2, n);  // gate_msa, gate_mlp
  Tensor hidden = ops::gated_residual(x, attn, gates, 0);
  const Tensor ff = ops::linear(ops::silu(ops::linear(ops::layer_norm(hidden, kEps, w.norm2.weight, w.norm2.bias),
                                                      w.ff_in.weight, w.ff_in.bias)),
                                w.ff_out.weight, w.ff_out.bias);
  hidden = ops::gated_residual(hidden, ff, gates, 1);
  capture(prefix_ + ".out", hidden);
  return hidden;
}

}  // namespace dattn::hv15
