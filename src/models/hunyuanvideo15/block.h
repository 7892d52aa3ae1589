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
  // `tensor_parallel`: the group the heads and FFN columns are split over (null or size 1: none); the
  // weights then hold this rank's parts and the attention layer is resolved for its H/T heads.
  Block(std::int64_t index, const HunyuanVideo15TransformerConfig& config, const AttentionSettings& settings,
        DType dtype, Device device, const std::shared_ptr<parallel::Communicator>& tensor_parallel = nullptr);

  // silu_temb [B, D]; text_valid[b] <= T. When `need_text` is false the text stream's feed-forward (which
  // only later blocks read) is skipped and the returned text is the attention's residual only.
  Streams forward(const BlockWeights& w, const Streams& in, const Tensor& silu_temb,
                  const std::vector<std::int64_t>& text_valid, const RopeTables& rope, bool need_text,
                  const Capture& capture) const;

  const AttentionLayer& layer() const { return *layer_; }

 private:
  std::string prefix_;
  std::int64_t heads_, head_dim_;  // heads_: this rank's (all of them without tensor parallel)
  std::unique_ptr<AttentionLayer> layer_;
  std::shared_ptr<parallel::Communicator> tp_;  // null: every head and FFN column is here
};

}  // namespace dattn::hv15
