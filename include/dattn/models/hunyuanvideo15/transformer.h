#pragma once
// The HunyuanVideo-1.5 video transformer (diffusers HunyuanVideo15Transformer3DModel): a token refiner
// over the Qwen2.5-VL text, a projection of the ByT5 glyph text (and of SigLIP image embeddings for
// I2V), and dual-stream blocks whose one joint attention runs over the video tokens then the packed text
// tokens with a key-padding mask.
//
// Exactness of what dattn leaves out: a padded text token is masked as a key everywhere (refiner and
// joint attention), so it can only change its own row, and its row never reaches the video output.
// dattn therefore drops padded tokens before the refiner and the block stack (the text stream holds
// max over the batch of the valid count, not 1985 rows), which is exact for the output; the last block's
// text feed-forward, whose result nothing reads, is skipped as well.
//
// Attention roles: "self" for transformer_blocks.*.attn (the joint attention) and
// "hunyuanvideo15.refiner" (category "self") for context_embedder.token_refiner.refiner_blocks.*.attn.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dattn/models/quantization.h"
#include "dattn/attention/config.h"
#include "dattn/core/tensor.h"
#include "dattn/models/denoiser.h"
#include "dattn/models/hunyuanvideo15/config.h"
#include "dattn/parallel/communicator.h"

namespace dattn {

struct Hv15RunOptions {
  Device device = Device::CPU;
  DType dtype = DType::F32;  // fp32, bf16 or fp16: weights are converted to it when loaded
  AttentionSettings attention;
  // Fp8: the dual-stream blocks' attention projections and FFN linears quantized at load (weights.h).
  Quantization quantization = Quantization::None;
  // Ulysses sequence parallel (docs/parallel.md) over this group when it has more than one rank: each
  // rank runs its slice of the video tokens through the blocks, the text stream is replicated, the joint
  // attention exchanges video tokens for heads around the backend, and the output is gathered, so every
  // rank returns the whole prediction. (Initialised, so the pipeline's brace-initialisation of the first
  // fields does not warn.)
  std::shared_ptr<parallel::Communicator> ulysses = nullptr;
  // Tensor parallel (docs/parallel.md) over this group when it has more than one rank: each rank loads
  // and runs its share of every dual-stream block's heads and FFN columns, the row-parallel projections'
  // outputs are summed over the group, and every rank returns the whole prediction. Composes with `ulysses`
  // (the heads must split over both; the ranks of one tensor-parallel group hold the same video tokens).
  std::shared_ptr<parallel::Communicator> tensor_parallel = nullptr;
};

// Receives named intermediates during a forward (tests compare them with diffusers' hooks); names follow
// the golden case (tests/golden/README.md, hv15_tiny/cases/transformer_t2v): module paths with `.out`.
using Hv15Capture = std::function<void(const std::string& name, const Tensor& value)>;

// The text inputs of one forward. Masks are [B, L] of any dtype (nonzero = valid token), on any device.
struct Hv15TextInputs {
  Tensor encoder_hidden_states;     // [B, L1, text_embed_dim]: Qwen2.5-VL prompt embeddings
  Tensor encoder_attention_mask;    // [B, L1]
  Tensor encoder_hidden_states_2;   // [B, L2, text_embed_2_dim]: ByT5 glyph embeddings
  Tensor encoder_attention_mask_2;  // [B, L2]; all zero when the prompt has no quoted text
  Tensor image_embeds;              // [B, Li, image_embed_dim]; undefined or all zero for text to video
};

// The conditioning names predict() reads (the Hv15TextInputs fields); "image_embeds" is optional.
inline constexpr const char* kHv15TextInput = "encoder_hidden_states";
inline constexpr const char* kHv15TextMask = "encoder_attention_mask";
inline constexpr const char* kHv15GlyphInput = "encoder_hidden_states_2";
inline constexpr const char* kHv15GlyphMask = "encoder_attention_mask_2";
inline constexpr const char* kHv15ImageInput = "image_embeds";

class HunyuanVideo15Transformer final : public Denoiser {
 public:
  // Reads DIR/config.json and the weights in DIR, builds the attention layers (ConfigError when an
  // explicitly chosen backend cannot run a role) before any weight is read. Throws UserError.
  static HunyuanVideo15Transformer load(const std::string& dir, const Hv15RunOptions& options);
  ~HunyuanVideo15Transformer() override;
  HunyuanVideo15Transformer(HunyuanVideo15Transformer&&) noexcept;
  HunyuanVideo15Transformer& operator=(HunyuanVideo15Transformer&&) noexcept;

  const HunyuanVideo15TransformerConfig& config() const;
  const Hv15RunOptions& options() const;

  // hidden_states [B, in_channels, F, H, W] (latents, conditioning latents and mask, concatenated);
  // timestep [B] or [1]. Any float dtype, any device. Returns the sample [B, out_channels, F, H, W] in the
  // run dtype on the run device.
  Tensor forward(const Tensor& hidden_states, const Tensor& timestep, const Hv15TextInputs& text,
                 const Hv15Capture& capture = {}) const;

  // Denoiser: latents [B, out_channels, F, H, W] (text to video: zero conditioning latents and mask are
  // appended up to in_channels), the timestep rounded to the run dtype as the pipeline passes it
  // (t.to(latents.dtype)). Returns the prediction as float32 on the run device.
  Tensor predict(const Tensor& latents, double timestep, const Conditioning& conditioning) const override;
  // Roles "self" (joint attention) and "hunyuanvideo15.refiner".
  std::vector<Resolution> attention_resolutions() const override;

 private:
  struct Impl;
  explicit HunyuanVideo15Transformer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dattn
