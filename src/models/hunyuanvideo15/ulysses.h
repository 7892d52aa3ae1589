#pragma once
// Ulysses sequence parallel around HunyuanVideo-1.5's joint attention. Each rank of the group holds
// S/P consecutive video tokens of every head; the text stream (a few hundred tokens) is replicated on
// every rank. The backend runs, on each rank, every video token and every text token of the rank's H/P
// heads: video q/k/v come through an all_to_all, text q/k/v are this rank's heads of the replicated
// ones (no communication). One all_to_all brings back this rank's video tokens and every text token, of
// every head, so each rank again holds the whole text stream.
// Under tensor parallel "every head" is the tensor-parallel rank's H/T: the exchange runs on them alone.
#include <cstdint>
#include <vector>

#include "dattn/attention/layer.h"
#include "dattn/core/tensor.h"
#include "dattn/parallel/communicator.h"
#include "models/hunyuanvideo15/rope.h"

namespace dattn::hv15 {

struct Qkv {  // attention inputs, [B, N, H, D] each
  Tensor q, k, v;
};

// video: this rank's Sv/P tokens; text: every text token (item b's first text_valid[b] valid); every
// head of both. The layer is resolved for H/P heads. Returns [B, Sv/P + T, H, D]: the backend's output
// for this rank's video tokens then every text token, the layout of the one-process joint output. Every
// rank of `group` calls it with the same shapes.
Tensor ulysses_joint_attention(parallel::Communicator& group, const AttentionLayer& layer, const Qkv& video,
                               const Qkv& text, const std::vector<std::int64_t>& text_valid);

// Heads [rank * H/P, (rank + 1) * H/P) of x [B, N, H, D] (a copy).
Tensor head_slice(const Tensor& x, int rank, int ranks);

// The tables' rows [start, start + length) (views, no copy): the rotary angles of this rank's tokens.
RopeTables slice_rope(const RopeTables& rope, std::int64_t start, std::int64_t length);

}  // namespace dattn::hv15
