#pragma once
// HunyuanVideo15IndividualTokenRefinerBlock: layer norm, self-attention over the valid Qwen tokens
// (role "hunyuanvideo15.refiner"), a gated residual, layer norm, a SiLU feed-forward and a second gated
// residual; the two gates come from the refiner's own timestep + pooled-text embedding.
#include <memory>
#include <string>
#include <vector>

#include "dattn/attention/layer.h"
#include "dattn/models/hunyuanvideo15/config.h"
#include "models/hunyuanvideo15/capture.h"
#include "models/hunyuanvideo15/weights.h"

namespace dattn::hv15 {

class RefinerBlock {
 public:
  RefinerBlock(std::int64_t index, const HunyuanVideo15TransformerConfig& config, const AttentionSettings& settings,
               DType dtype, Device device);

  // x [B, N, D] (row b's first counts[b] tokens valid); silu_temb [B, D] = SiLU of the refiner embedding.
  Tensor forward(const RefinerBlockWeights& w, const Tensor& x, const Tensor& silu_temb,
                 const std::vector<std::int64_t>& counts, const Capture& capture) const;

  const AttentionLayer& layer() const { return *layer_; }

 private:
  std::string prefix_;
  std::int64_t heads_, head_dim_;
  std::unique_ptr<AttentionLayer> layer_;
};

}  // namespace dattn::hv15
