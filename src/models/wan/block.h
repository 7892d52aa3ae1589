#pragma once
// WanTransformerBlock: modulated self-attention, cross-attention to the text, modulated feed-forward,
// each added back to the residual stream (gated for the modulated ones).
#include <memory>
#include <string>

#include "dattn/models/wan/config.h"
#include "dattn/ops/modulation.h"
#include "models/wan/attention.h"

namespace dattn::wan {

class Block {
 public:
  // Builds (resolves and checks) the two attention layers; weights come with each forward.
  // `ulysses`: the sequence-parallel group of the self-attention (null or size 1: none).
  // `tensor_parallel`: the group the heads and FFN columns are split over (null or size 1: none); the
  // weights then hold this rank's parts (tensor_parallel.h).
  Block(std::int64_t index, const WanTransformerConfig& config, const AttentionSettings& settings, DType dtype,
        Device device, const std::shared_ptr<parallel::Communicator>& ulysses = nullptr,
        const std::shared_ptr<parallel::Communicator>& tensor_parallel = nullptr);

  // x [B, S, D]; text [B, L, D]; timestep_proj [R, 6 D] with the row of each token; rope for the grid.
  Tensor forward(const BlockWeights& w, const Tensor& x, const Tensor& text, const Tensor& timestep_proj,
                 const std::vector<std::int32_t>& row_of_token, const RopeTables& rope, const Capture& capture) const;

  const Attention& attn1() const { return attn1_; }
  const Attention& attn2() const { return attn2_; }

 private:
  std::string prefix_;
  float eps_;
  Attention attn1_, attn2_;
  std::shared_ptr<parallel::Communicator> tp_;  // null: the whole FFN is here
};

}  // namespace dattn::wan
