// WanAttention (see attention.h).
#include "models/wan/attention.h"

#include <memory>
#include <string>
#include <utility>

#include "dattn/core/error.h"
#include "dattn/core/run_context.h"
#include "dattn/ops/ops.h"
#include "models/tensor_parallel.h"
#include "models/wan/row_parallel.h"

namespace dattn::wan {

Attention::Attention(std::string name, const AttentionRoleDecl& decl, float eps, const AttentionSettings& settings,
                     Device device, std::shared_ptr<parallel::Communicator> ulysses,
                     std::shared_ptr<parallel::Communicator> tensor_parallel)
    : heads_(decl.nominal.heads_q),
      head_dim_(decl.nominal.head_dim),
      width_(decl.nominal.heads_q * decl.nominal.head_dim),
      ulysses_(ulysses && ulysses->size() > 1 ? std::move(ulysses) : nullptr),
      tp_(tensor_parallel && tensor_parallel->size() > 1 ? std::move(tensor_parallel) : nullptr),
      eps_(eps),
      dtype_(decl.nominal.dtype) {
  const std::int64_t split = (ulysses_ ? ulysses_->size() : 1) * (tp_ ? tp_->size() : 1);
  if (heads_ % split != 0)
    throw UserError(name + ": " + std::to_string(heads_) + " attention heads do not split over " +
                    std::to_string(split) +
                    " ranks (tensor parallel x Ulysses); expected degrees whose product divides them");
  if (tp_) heads_ /= tp_->size();
  // Resolved and checked for the declaration's nominal shape: dtype, heads and head dim are the ones
  // every call will have (under Ulysses and tensor parallel, this rank's share of the heads), the
  // lengths are nominal.
  AttentionShape shape = decl.nominal;
  shape.heads_q = shape.heads_kv = heads_;
  if (ulysses_) {
    shape.heads_q /= ulysses_->size();
    shape.heads_kv /= ulysses_->size();
  }
  layer_ = std::make_unique<AttentionLayer>(std::move(name), decl.role, decl.category, settings, shape, device);
}

Tensor Attention::forward(const AttentionWeights& w, const Tensor& x, const Tensor& context, const RopeTables* rope,
                          const Capture& capture, const std::string& capture_prefix) const {
  const std::int64_t b = x.dim(0), s = x.dim(1), l = context.dim(1);
  // The norm runs across heads; the rotary embedding (self-attention) per head, fused with it.
  // Under tensor parallel h holds this rank's heads and the norm's sums of squares cover every rank's.
  // Self-attention reads x three times: an FP8 run quantizes it once.
  const ops::LinearInput x_in(x), context_in(context);
  const bool self = context.data() == x.data() && context.shape() == x.shape();
  const ops::LinearInput& kv_in = self ? x_in : context_in;
  const auto norm = [&](const ops::LinearInput& in, const Linear& proj, const Tensor& gain, std::int64_t len) {
    const Tensor h = apply(proj, in);
    const Shape heads{b, len, heads_, head_dim_}, row{b, len, 1, heads_ * head_dim_};
    if (tp_) {
      if (!rope) return models::rms_norm_across_ranks(*tp_, h, width_, eps_, gain).reshape(heads);
      return models::rms_norm_rope_across_ranks(*tp_, h.reshape(row), width_, eps_, gain, rope->cos, rope->sin)
          .reshape(heads);
    }
    if (!rope) return ops::rms_norm(h, eps_, gain).reshape(heads);
    return ops::rms_norm_rope_interleaved(h.reshape(row), eps_, gain, rope->cos, rope->sin).reshape(heads);
  };
  Tensor q = norm(x_in, w.to_q, w.norm_q, s);
  Tensor k = norm(kv_in, w.to_k, w.norm_k, l);
  Tensor v = apply(w.to_v, kv_in).reshape({b, l, heads_, head_dim_});
  // Ulysses: this rank's tokens of every head -> every token of this rank's heads. The norm across heads
  // and the rotary embedding ran per token above, before the exchange.
  const std::int64_t ranks = ulysses_ ? ulysses_->size() : 1, heads = heads_ / ranks;
  if (ulysses_) {
    q = parallel::all_to_all_on_device(*ulysses_, q, 2, 1);
    k = parallel::all_to_all_on_device(*ulysses_, k, 2, 1);
    v = parallel::all_to_all_on_device(*ulysses_, v, 2, 1);
  }
  const std::int64_t seq_q = s * ranks, seq_k = l * ranks;
  Tensor out = Tensor::empty({b, seq_q, heads, head_dim_}, dtype_, x.device());
  AttentionProblem p;
  p.shape.batch = b;
  p.shape.seq_q = seq_q;
  p.shape.seq_k = seq_k;
  p.shape.heads_q = p.shape.heads_kv = heads;
  p.shape.head_dim = head_dim_;
  p.shape.dtype = dtype_;
  p.q = q.data(), p.k = k.data(), p.v = v.data(), p.out = out.data();
  if (x.device() == Device::CUDA) p.stream = current_context(Device::CUDA).stream();  // where the ops run
  layer_->forward(p);
  if (capture.on()) {
    capture(capture_prefix + ".q", q);
    capture(capture_prefix + ".k", k);
    capture(capture_prefix + ".v", v);
    capture(capture_prefix + ".out", out);
  }
  if (ulysses_) out = parallel::all_to_all_on_device(*ulysses_, out, 1, 2);  // back to this rank's tokens
  return apply_row_parallel(tp_.get(), w.to_out, out.reshape({b, s, heads_ * head_dim_}));
}

}  // namespace dattn::wan
