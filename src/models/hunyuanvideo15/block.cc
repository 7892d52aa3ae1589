// The dual-stream block (see block.h). Norms are non-affine LayerNorms and per-head RMSNorms, eps 1e-6.
#include "models/hunyuanvideo15/block.h"

#include <string>
#include <utility>

#include "dattn/core/error.h"
#include "dattn/models/attention_roles.h"
#include "dattn/ops/ops.h"
#include "models/hunyuanvideo15/attention_call.h"
#include "models/hunyuanvideo15/modulation.h"
#include "models/hunyuanvideo15/row_parallel.h"
#include "models/hunyuanvideo15/rows.h"
#include "models/hunyuanvideo15/ulysses.h"

namespace dattn::hv15 {
namespace {

constexpr float kEps = 1e-6f;
// AdaLayerNormZero's six vectors, in diffusers' chunk order.
enum : int { kShiftMsa = 0, kScaleMsa, kGateMsa, kShiftMlp, kScaleMlp, kGateMlp };

// One stream's queries and keys (normalised per head, with the rotary embedding when `rope` is given:
// video tokens) and values, written into rows of `joint` ([B, N, H, D] each) from `row` on.
void project_into(const Qkv& joint, std::int64_t row, const Tensor& x, const Linear& wq, const Linear& wk,
                  const Linear& wv, const Tensor& norm_q, const Tensor& norm_k, const RopeTables* rope) {
  const Shape shape{x.dim(0), x.dim(1), joint.q.dim(2), joint.q.dim(3)};
  const ops::LinearInput in(x);  // FP8: x quantized once for q, k and v
  const auto norm = [&](const Linear& w, const Tensor& gain, const Tensor& out) {
    const Tensor h = apply(w, in).reshape(shape);
    if (rope)
      ops::rms_norm_rope_interleaved(h, kEps, gain, rope->cos, rope->sin, {out, row});
    else
      ops::rms_norm(h, kEps, gain, {out, row});
  };
  norm(wq, norm_q, joint.q);
  norm(wk, norm_k, joint.k);
  const Tensor v = joint.v.reshape({joint.v.dim(0), joint.v.dim(1), joint.v.dim(2) * joint.v.dim(3)});
  apply_into(wv, in, {v, row});
}

Qkv empty_qkv(const Shape& shape, const Tensor& like) {
  return {Tensor::empty(shape, like.dtype(), like.device()), Tensor::empty(shape, like.dtype(), like.device()),
          Tensor::empty(shape, like.dtype(), like.device())};
}

// Tensor parallel: this rank's FFN columns (the GELU is per column), summed over `tp` after `out`.
Tensor feed_forward(parallel::Communicator* tp, const Tensor& x, const Linear& in, const Linear& out) {
  return tp ? apply_row_parallel(tp, out, apply_gelu_tanh(in, x)) : apply_feed_forward(in, out, x);
}

}  // namespace

Block::Block(std::int64_t index, const HunyuanVideo15TransformerConfig& config, const AttentionSettings& settings,
             DType dtype, Device device, std::shared_ptr<parallel::Communicator> ulysses,
             std::shared_ptr<parallel::Communicator> tensor_parallel)
    : prefix_("transformer_blocks." + std::to_string(index)),
      heads_(config.num_attention_heads),
      head_dim_(config.attention_head_dim),
      ulysses_(ulysses && ulysses->size() > 1 ? std::move(ulysses) : nullptr),
      tp_(tensor_parallel && tensor_parallel->size() > 1 ? std::move(tensor_parallel) : nullptr) {
  // Each rank's backend runs heads / (T x U): refused here, before any weight is read, if that is no
  // whole number (the pipelines refuse it earlier, naming the flags).
  const std::int64_t split = (ulysses_ ? ulysses_->size() : 1) * (tp_ ? tp_->size() : 1);
  if (heads_ % split != 0)
    throw UserError(prefix_ + ": " + std::to_string(heads_) + " attention heads do not split over " +
                    std::to_string(split) +
                    " ranks (tensor parallel x Ulysses); expected degrees whose product divides them");
  if (tp_) heads_ /= tp_->size();
  const auto roles = hunyuanvideo15_attention_roles(config, dtype);  // find_role returns into it
  const AttentionRoleDecl& decl = find_role(roles, "self");
  AttentionShape shape = decl.nominal;  // every call runs this rank's H/(T U) heads
  shape.heads_q = shape.heads_kv = heads_ / (ulysses_ ? ulysses_->size() : 1);
  layer_ = std::make_unique<AttentionLayer>(prefix_ + ".attn", decl.role, decl.category, settings, shape, device);
}

Tensor Block::joint_attention(const BlockWeights& w, const Tensor& nv, const Tensor& nt,
                              const std::vector<std::int64_t>& text_valid, const RopeTables& rope,
                              const Capture& capture) const {
  const std::int64_t sv = nv.dim(1);
  const Qkv qkv = empty_qkv({nv.dim(0), sv + nt.dim(1), heads_, head_dim_}, nv);
  project_into(qkv, 0, nv, w.to_q, w.to_k, w.to_v, w.norm_q, w.norm_k, &rope);
  project_into(qkv, sv, nt, w.add_q, w.add_k, w.add_v, w.norm_added_q, w.norm_added_k, nullptr);
  std::vector<std::int64_t> valid_keys;
  for (std::int64_t n : text_valid) valid_keys.push_back(sv + n);
  const Tensor out = attend(*layer_, qkv.q, qkv.k, qkv.v, valid_keys);
  if (capture.on()) {
    capture(prefix_ + ".attn.backend.q", qkv.q);
    capture(prefix_ + ".attn.backend.k", qkv.k);
    capture(prefix_ + ".attn.backend.v", qkv.v);
    capture(prefix_ + ".attn.backend.out", out);
  }
  return out;
}

Tensor Block::ulysses_attention(const BlockWeights& w, const Tensor& nv, const Tensor& nt,
                                const std::vector<std::int64_t>& text_valid, const RopeTables& rope,
                                const Capture& capture) const {
  // The same per-token norms and rotary embedding as one process, on this rank's video tokens (rope holds
  // their rows) and on the replicated text.
  const Qkv video = empty_qkv({nv.dim(0), nv.dim(1), heads_, head_dim_}, nv);
  const Qkv text = empty_qkv({nt.dim(0), nt.dim(1), heads_, head_dim_}, nt);
  project_into(video, 0, nv, w.to_q, w.to_k, w.to_v, w.norm_q, w.norm_k, &rope);
  project_into(text, 0, nt, w.add_q, w.add_k, w.add_v, w.norm_added_q, w.norm_added_k, nullptr);
  const Tensor out = ulysses_joint_attention(*ulysses_, *layer_, video, text, text_valid);
  capture(prefix_ + ".attn.backend.out", out);  // this rank's video tokens, then the text
  return out;
}

Streams Block::forward(const BlockWeights& w, const Streams& in, const Tensor& silu_temb,
                       const std::vector<std::int64_t>& text_valid, const RopeTables& rope, bool need_text,
                       const Capture& capture) const {
  const std::int64_t b = in.video.dim(0), sv = in.video.dim(1), st = in.text.dim(1), d = heads_ * head_dim_;
  const ops::TokenModulation mv = batch_modulation(silu_temb, w.norm1, 6, sv);
  const ops::TokenModulation mt = batch_modulation(silu_temb, w.norm1_context, 6, st);
  const Tensor nv = ops::layer_norm_modulated(in.video, kEps, mv, kShiftMsa, kScaleMsa);
  const Tensor nt = ops::layer_norm_modulated(in.text, kEps, mt, kShiftMsa, kScaleMsa);
  if (capture.on()) {
    capture(prefix_ + ".norm1.out.norm_hidden_states", nv);
    capture_vector(capture, prefix_ + ".norm1.out.gate_msa", mv, kGateMsa);
    capture_vector(capture, prefix_ + ".norm1.out.shift_mlp", mv, kShiftMlp);
    capture_vector(capture, prefix_ + ".norm1.out.scale_mlp", mv, kScaleMlp);
    capture_vector(capture, prefix_ + ".norm1.out.gate_mlp", mv, kGateMlp);
    capture(prefix_ + ".norm1_context.out.norm_encoder_hidden_states", nt);
    capture_vector(capture, prefix_ + ".norm1_context.out.c_gate_msa", mt, kGateMsa);
    capture_vector(capture, prefix_ + ".norm1_context.out.c_shift_mlp", mt, kShiftMlp);
    capture_vector(capture, prefix_ + ".norm1_context.out.c_scale_mlp", mt, kScaleMlp);
    capture_vector(capture, prefix_ + ".norm1_context.out.c_gate_mlp", mt, kGateMlp);
  }

  const Tensor out = ulysses_ ? ulysses_attention(w, nv, nt, text_valid, rope, capture)
                              : joint_attention(w, nv, nt, text_valid, rope, capture);
  // Each stream's output projection reads its rows of the joint output in place (no copy of them when B > 1);
  // under tensor parallel, d is this rank's heads' columns and the projections are row-parallel.
  const Tensor joint = out.reshape({b, sv + st, d});
  const Tensor attn_v = apply_rows_row_parallel(tp_.get(), w.to_out, ops::RowWindow{joint, 0}, sv);
  const Tensor attn_t = apply_rows_row_parallel(tp_.get(), w.to_add_out, ops::RowWindow{joint, sv}, st);
  capture(prefix_ + ".attn.out.hidden_states", attn_v);
  capture(prefix_ + ".attn.out.encoder_hidden_states", attn_t);

  // Each stream's gated residual and the FFN's norm in one pass (ops::residual_layer_norm_modulated).
  Streams o;
  const ops::ResidualAndNorm rv =
      ops::residual_layer_norm_modulated(in.video, attn_v, &mv, kGateMsa, kEps, mv, kShiftMlp, kScaleMlp);
  const Tensor ff = feed_forward(tp_.get(), rv.normed, w.ff_in, w.ff_out);
  capture(prefix_ + ".ff.out", ff);
  o.video = ops::gated_residual(rv.residual, ff, mv, kGateMlp);
  if (need_text || capture.on()) {
    const ops::ResidualAndNorm rt =
        ops::residual_layer_norm_modulated(in.text, attn_t, &mt, kGateMsa, kEps, mt, kShiftMlp, kScaleMlp);
    const Tensor ffc = feed_forward(tp_.get(), rt.normed, w.ff_context_in, w.ff_context_out);
    capture(prefix_ + ".ff_context.out", ffc);
    o.text = ops::gated_residual(rt.residual, ffc, mt, kGateMlp);
  } else {
    o.text = ops::gated_residual(in.text, attn_t, mt, kGateMsa);
  }
  capture(prefix_ + ".out.hidden_states", o.video);
  capture(prefix_ + ".out.encoder_hidden_states", o.text);
  return o;
}

}  // namespace dattn::hv15
