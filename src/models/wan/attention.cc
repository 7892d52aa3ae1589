// WanAttention (see attention.h).
#include "models/wan/attention.h"

#include "dattn/core/run_context.h"
#include "dattn/ops/ops.h"

namespace dattn::wan {
namespace {

// The shape a layer is resolved and checked for at build time. Sequence lengths are nominal (a
// 1024-token video, 512 text tokens); dtype, heads and head dim are the ones every call will have.
AttentionShape nominal_shape(const std::string& role, std::int64_t heads, std::int64_t head_dim, DType dtype) {
  AttentionShape s;
  s.batch = 1;
  s.seq_q = 1024;
  s.seq_k = role == "cross" ? 512 : 1024;
  s.heads_q = s.heads_kv = heads;
  s.head_dim = head_dim;
  s.dtype = dtype;
  return s;
}

}  // namespace

Attention::Attention(std::string name, std::string role, std::int64_t heads, std::int64_t head_dim, float eps,
                     const AttentionSettings& settings, DType dtype, Device device)
    : heads_(heads), head_dim_(head_dim), eps_(eps), dtype_(dtype) {
  const AttentionShape shape = nominal_shape(role, heads, head_dim, dtype);
  layer_ = std::make_unique<AttentionLayer>(std::move(name), std::move(role), std::nullopt, settings, shape, device);
}

Tensor Attention::forward(const AttentionWeights& w, const Tensor& x, const Tensor& context, const RopeTables* rope,
                          const Capture& capture, const std::string& capture_prefix) const {
  const std::int64_t b = x.dim(0), s = x.dim(1), l = context.dim(1);
  Tensor q = ops::rms_norm(ops::linear(x, w.to_q.weight, w.to_q.bias), eps_, w.norm_q);
  Tensor k = ops::rms_norm(ops::linear(context, w.to_k.weight, w.to_k.bias), eps_, w.norm_k);
  Tensor v = ops::linear(context, w.to_v.weight, w.to_v.bias);
  q = q.reshape({b, s, heads_, head_dim_});
  k = k.reshape({b, l, heads_, head_dim_});
  v = v.reshape({b, l, heads_, head_dim_});
  if (rope) {
    q = ops::apply_rope_interleaved(q, rope->cos, rope->sin);
    k = ops::apply_rope_interleaved(k, rope->cos, rope->sin);
  }
  Tensor out = Tensor::empty({b, s, heads_, head_dim_}, dtype_, x.device());
  AttentionProblem p;
  p.shape.batch = b;
  p.shape.seq_q = s;
  p.shape.seq_k = l;
  p.shape.heads_q = p.shape.heads_kv = heads_;
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
  return ops::linear(out.reshape({b, s, heads_ * head_dim_}), w.to_out.weight, w.to_out.bias);
}

}  // namespace dattn::wan
