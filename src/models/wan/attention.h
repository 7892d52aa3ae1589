#pragma once
// WanAttention: q/k/v projections, RMS norm of q and k across all heads, rotary embedding (self-attention
// only), the attention backend its role resolves to, and the output projection.
#include <memory>
#include <string>

#include "dattn/attention/layer.h"
#include "dattn/core/tensor.h"
#include "dattn/models/attention_roles.h"
#include "dattn/parallel/communicator.h"
#include "models/wan/capture.h"
#include "models/wan/rope_tables.h"
#include "models/wan/weights.h"

namespace dattn::wan {

class Attention {
 public:
  // `name` is the module path ("blocks.3.attn1"), `decl` the Wan declaration of its role ("self" or
  // "cross", dattn/models/attention_roles.h). The backend is resolved and checked here, for the
  // declaration's nominal shape on `device` (ConfigError when an explicit choice cannot run it), before
  // any weight is read.
  // With a Ulysses group of P > 1 ranks (self-attention only), x holds this rank's S/P tokens: q, k and
  // v are exchanged to [B, S, H/P, D] around the backend (resolved for H/P heads) and the output back.
  // With a tensor-parallel group of T > 1 ranks, the weights hold this rank's H/T heads
  // (tensor_parallel.h): q, k and v are [B, S, H/T, D], the norm across heads sums its squares over the
  // group, and the output projection is row-parallel. Both compose: the backend runs H/(T P) heads.
  Attention(std::string name, const AttentionRoleDecl& decl, float eps, const AttentionSettings& settings,
            Device device, std::shared_ptr<parallel::Communicator> ulysses = nullptr,
            std::shared_ptr<parallel::Communicator> tensor_parallel = nullptr);

  // x [B, S, D] attends to context [B, L, D] (x itself for self-attention); rope is applied to q and k
  // when given. Captures `capture_prefix`.{q, k, v, out} (the backend's BSHD inputs and output).
  Tensor forward(const AttentionWeights& w, const Tensor& x, const Tensor& context, const RopeTables* rope,
                 const Capture& capture, const std::string& capture_prefix) const;

  const AttentionLayer& layer() const { return *layer_; }

 private:
  std::int64_t heads_, head_dim_;  // heads_: this rank's (all of them without tensor parallel)
  std::int64_t width_;             // every head's columns: the width the q/k norm runs over
  std::shared_ptr<parallel::Communicator> ulysses_;  // null: the whole sequence is here
  std::shared_ptr<parallel::Communicator> tp_;       // null: every head is here
  float eps_;
  DType dtype_;
  std::unique_ptr<AttentionLayer> layer_;
};

}  // namespace dattn::wan
