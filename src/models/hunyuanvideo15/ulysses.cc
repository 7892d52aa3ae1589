// Ulysses around the joint attention (see ulysses.h).
#include "models/hunyuanvideo15/ulysses.h"

#include "dattn/ops/row_window.h"
#include "models/hunyuanvideo15/attention_call.h"
#include "models/hunyuanvideo15/rows.h"

namespace dattn::hv15 {

Tensor head_slice(const Tensor& x, int rank, int ranks) {
  const std::int64_t b = x.dim(0), n = x.dim(1), h = x.dim(2) / ranks, d = x.dim(3);
  // As [B * N, P, H/P * D] the rank's heads are row `rank` of every token.
  return ops::copy_from({x.reshape({b * n, ranks, h * d}), rank}, 1).reshape({b, n, h, d});
}

Tensor ulysses_joint_attention(parallel::Communicator& group, const AttentionLayer& layer, const Qkv& video,
                               const Qkv& text, const std::vector<std::int64_t>& text_valid) {
  const int ranks = group.size(), rank = group.rank();
  const std::int64_t b = video.q.dim(0), local = video.q.dim(1), sv = local * ranks, st = text.q.dim(1);
  const std::int64_t heads = video.q.dim(2) / ranks, head_dim = video.q.dim(3);
  // [all video tokens | text tokens] of this rank's heads: the one-process joint sequence's order.
  const auto join = [&](const Tensor& v, const Tensor& t) {
    Tensor j = Tensor::empty({b, sv + st, heads, head_dim}, v.dtype(), v.device());
    ops::copy_into(parallel::all_to_all_on_device(group, v, 2, 1), {j, 0});
    ops::copy_into(head_slice(t, rank, ranks), {j, sv});
    return j;
  };
  const Tensor q = join(video.q, text.q), k = join(video.k, text.k), v = join(video.v, text.v);
  std::vector<std::int64_t> valid_keys;
  for (std::int64_t n : text_valid) valid_keys.push_back(sv + n);
  const Tensor out = attend(layer, q, k, v, valid_keys);
  // Part r of what is sent back is rank r's video tokens then the text: the all_to_all returns this
  // rank's tokens and the whole text, each with every rank's heads (in rank order, so all heads).
  Tensor send = Tensor::empty({b, ranks * (local + st), heads, head_dim}, out.dtype(), out.device());
  for (std::int64_t i = 0; i < b; ++i)
    for (std::int64_t r = 0; r < ranks; ++r) {
      copy_rows(send, i, r * (local + st), out, r * local, local);
      copy_rows(send, i, r * (local + st) + local, out, sv, st);
    }
  return parallel::all_to_all_on_device(group, send, 1, 2);
}

RopeTables slice_rope(const RopeTables& rope, std::int64_t start, std::int64_t length) {
  return {rope.cos.narrow0(start, length), rope.sin.narrow0(start, length)};
}

}  // namespace dattn::hv15
