// One attention call (see attention_call.h).
#include "models/hunyuanvideo15/attention_call.h"

#include "dattn/core/run_context.h"

namespace dattn::hv15 {

Tensor attend(const AttentionLayer& layer, const Tensor& q, const Tensor& k, const Tensor& v,
              const std::vector<std::int64_t>& valid_keys) {
  Tensor out = Tensor::empty(q.shape(), q.dtype(), q.device());
  AttentionProblem p;
  p.shape.batch = q.dim(0);
  p.shape.seq_q = q.dim(1);
  p.shape.seq_k = k.dim(1);
  p.shape.heads_q = q.dim(2);
  p.shape.heads_kv = k.dim(2);
  p.shape.head_dim = q.dim(3);
  p.shape.dtype = q.dtype();
  for (std::int64_t n : valid_keys)
    if (n < k.dim(1)) {
      p.key_lengths = valid_keys;
      p.shape.mask = MaskKind::KeyPadding;
      break;
    }
  p.q = q.data(), p.k = k.data(), p.v = v.data(), p.out = out.data();
  if (q.device() == Device::CUDA) p.stream = current_context(Device::CUDA).stream();  // where the ops run
  layer.forward(p);
  return out;
}

}  // namespace dattn::hv15
