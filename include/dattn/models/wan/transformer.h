#pragma once
// The Wan video transformer (diffusers WanTransformer3DModel): Wan2.1 and Wan2.2, text-to-video with a
// timestep per batch item or per token (TI2V). Attention layers declare role `self` (attn1) and `cross`
// (attn2); their backends are resolved from the attention settings when the model is built.
#include <functional>
#include <memory>
#include <string>

#include "dattn/attention/config.h"
#include "dattn/core/tensor.h"
#include "dattn/models/denoiser.h"
#include "dattn/models/quantization.h"
#include "dattn/models/wan/config.h"
#include "dattn/parallel/communicator.h"

namespace dattn {

struct WanRunOptions {
  Device device = Device::CPU;
  DType dtype = DType::F32;  // fp32, bf16 or fp16: weights are converted to it when loaded
  AttentionSettings attention;
  // Wan2.2 TI2V (model_index.json's expand_timesteps): predict() gives the transformer one timestep per
  // latent token, all equal to t for text to video (no conditioning frame), as diffusers' pipeline does;
  // otherwise one timestep per batch item.
  bool per_token_timesteps = false;
  // Ulysses sequence parallel (docs/parallel.md) over this group when it has more than one rank: each
  // rank runs its slice of the video tokens, self-attention exchanges heads for tokens around the
  // backend, and the output is gathered, so every rank returns the whole prediction.
  std::shared_ptr<parallel::Communicator> ulysses;
  // Tensor parallel (docs/parallel.md) over this group when it has more than one rank: each rank loads
  // and runs its share of every block's heads and FFN columns, the row-parallel projections' outputs are
  // summed over the group, and every rank returns the whole prediction. Composes with `ulysses` (the
  // heads must split over both). Its ranks are the ranks of one Ulysses shard.
  std::shared_ptr<parallel::Communicator> tensor_parallel = nullptr;
  // Fp8: the blocks' attention (q, k, v, out) and FFN linears quantized at load (wan::quantize_fp8).
  Quantization quantization = Quantization::None;
};

// Receives named intermediates during a forward (tests compare them with diffusers' hooks). Names and
// layouts follow tests/golden/README.md: patch_embedding.out [B, D, F', H', W'],
// condition_embedder.{temb, timestep_proj} ([B, X] or, per-token, [B, S, X]), condition_embedder.text,
// rope.{cos, sin} [1, S, 1, head_dim], blocks.N.{attn1, attn2, ffn}.out and blocks.N.out [B, S, D], and
// the attention backend's inputs/output blocks.N.attn_{self,cross}.{q, k, v, out} in BSHD.
using WanCapture = std::function<void(const std::string& name, const Tensor& value)>;

// The conditioning input predict() reads: the text embeddings [B, L, text_dim].
inline constexpr const char* kWanTextInput = "encoder_hidden_states";

class WanTransformer final : public Denoiser {
 public:
  // Reads DIR/config.json and the weights in DIR (single file or sharded), builds the attention layers.
  // Throws UserError (config, weights) or ConfigError (an attention backend that cannot run a layer).
  static WanTransformer load(const std::string& dir, const WanRunOptions& options);
  ~WanTransformer() override;
  WanTransformer(WanTransformer&&) noexcept;
  WanTransformer& operator=(WanTransformer&&) noexcept;

  const WanTransformerConfig& config() const;
  const WanRunOptions& options() const;

  // hidden_states [B, in_channels, F, H, W] (F, H, W multiples of the patch); timestep [B] (or [1],
  // shared by the batch) or per token [B, S] with S = (F/pt)(H/ph)(W/pw); encoder_hidden_states
  // [B, L, text_dim]. Any float dtype, any device (they are converted). Returns the predicted sample
  // [B, out_channels, F, H, W] in the run dtype on the run device.
  Tensor forward(const Tensor& hidden_states, const Tensor& timestep, const Tensor& encoder_hidden_states,
                 const WanCapture& capture = {}) const;

  // Denoiser: forward at timestep t (per token when per_token_timesteps) on conditioning
  // kWanTextInput, the prediction as float32 on the run device.
  Tensor predict(const Tensor& latents, double timestep, const Conditioning& conditioning) const override;
  // Roles "self" (attn1) and "cross" (attn2), as the first block resolved them (every block resolves
  // the same role for the same problem).
  std::vector<Resolution> attention_resolutions() const override;

 private:
  struct Impl;
  explicit WanTransformer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dattn
