#pragma once
// HunyuanVideo15TransformerBlock: the video and text streams each get an adaLN-Zero norm, one joint
// attention runs over video then text (per-head RMS norm on q and k, RoPE on the video tokens only,
// text keys past each item's valid count masked), then each stream gets its gated residual and its
// own modulated feed-forward.
#include <memory>
#include <string>
#include <vector>

#include "dattn/attention/layer.h"
#include "dattn/models/hunyuanvideo15/config.h"
#include "dattn/parallel/communicator.h"
#include "models/hunyuanvideo15/capture.h"
#include "models/hunyuanvideo15/rope.h"
#include "models/hunyuanvideo15/weights.h"

namespace dattn::hv15 {

struct Streams {
  Tensor video;  // [B, Sv, D]
  Tensor text;   // [B, T, D]: item b's first text_valid[b] rows are tokens, the rest padding
};

class Block {
 public:
  // `ulysses`: the sequence-parallel group, `tensor_parallel`: the group the heads and FFN columns are
  // split over (each null or size 1: none). With U Ulysses and T tensor-parallel ranks the weights hold
  // this rank's H/T heads and FFN columns, the video stream holds this rank's Sv/U tokens (ulysses.h), and
  // the attention layer is resolved for H/(T U) heads. UserError when T x U does not divide the heads.
  Block(std::int64_t index, const HunyuanVideo15TransformerConfig& config, const AttentionSettings& settings,
        DType dtype, Device device, std::shared_ptr<parallel::Communicator> ulysses = nullptr,
        std::shared_ptr<parallel::Communicator> tensor_parallel = nullptr);

  // silu_temb [B, D]; text_valid[b] <= T; rope holds the rows of the video stream's tokens. When
  // `need_text` is false the text stream's feed-forward (which only later blocks read) is skipped and the
  // returned text is the attention's residual only.
  Streams forward(const BlockWeights& w, const Streams& in, const Tensor& silu_temb,
                  const std::vector<std::int64_t>& text_valid, const RopeTables& rope, bool need_text,
                  const Capture& capture) const;

  const AttentionLayer& layer() const { return *layer_; }

 private:
  // The backend's output [B, Sv + T, H, D] for the normed streams nv [B, Sv, D] and nt [B, T, D]: in one
  // process, or across the Ulysses group (Sv this rank's tokens); H and D are this rank's heads_ and
  // their columns.
  Tensor joint_attention(const BlockWeights& w, const Tensor& nv, const Tensor& nt,
                         const std::vector<std::int64_t>& text_valid, const RopeTables& rope,
                         const Capture& capture) const;
  Tensor ulysses_attention(const BlockWeights& w, const Tensor& nv, const Tensor& nt,
                           const std::vector<std::int64_t>& text_valid, const RopeTables& rope,
                           const Capture& capture) const;

  std::string prefix_;
  std::int64_t heads_, head_dim_;  // heads_: this rank's H/T (all of them without tensor parallel)
  std::shared_ptr<parallel::Communicator> ulysses_;  // null: the whole sequence is here
  std::shared_ptr<parallel::Communicator> tp_;       // null: every head and FFN column is here
  std::unique_ptr<AttentionLayer> layer_;
};

}  // namespace dattn::hv15
