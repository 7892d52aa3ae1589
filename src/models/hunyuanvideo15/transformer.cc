// HunyuanVideo15Transformer3DModel: loading, input checks and the top-level forward (see transformer.h).
#include "dattn/models/hunyuanvideo15/transformer.h"

#include <array>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "dattn/core/error.h"
#include "dattn/io/weight_store.h"
#include "dattn/models/attention_roles.h"
#include "dattn/ops/combine.h"
#include "dattn/ops/ops.h"
#include "models/hunyuanvideo15/block.h"
#include "models/hunyuanvideo15/modulation.h"
#include "models/hunyuanvideo15/refiner.h"
#include "models/hunyuanvideo15/rope.h"
#include "models/hunyuanvideo15/rows.h"
#include "models/hunyuanvideo15/text_stream.h"
#include "models/hunyuanvideo15/ulysses.h"
#include "models/hunyuanvideo15/weights.h"
#include "models/wan/sequence_shard.h"

namespace dattn {

struct HunyuanVideo15Transformer::Impl {
  HunyuanVideo15TransformerConfig config;
  Hv15RunOptions options;
  hv15::Weights weights;
  std::vector<std::unique_ptr<hv15::RefinerBlock>> refiner;
  std::vector<std::unique_ptr<hv15::Block>> blocks;
  // The RoPE tables of the last latent grid: every denoising step runs the same grid.
  mutable std::array<std::int64_t, 3> rope_grid{-1, -1, -1};
  mutable hv15::RopeTables rope;
};

HunyuanVideo15Transformer::HunyuanVideo15Transformer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HunyuanVideo15Transformer::~HunyuanVideo15Transformer() = default;
HunyuanVideo15Transformer::HunyuanVideo15Transformer(HunyuanVideo15Transformer&&) noexcept = default;
HunyuanVideo15Transformer& HunyuanVideo15Transformer::operator=(HunyuanVideo15Transformer&&) noexcept = default;
const HunyuanVideo15TransformerConfig& HunyuanVideo15Transformer::config() const { return impl_->config; }
const Hv15RunOptions& HunyuanVideo15Transformer::options() const { return impl_->options; }

HunyuanVideo15Transformer HunyuanVideo15Transformer::load(const std::string& dir, const Hv15RunOptions& options) {
  if (options.dtype != DType::F32 && options.dtype != DType::BF16 && options.dtype != DType::F16)
    throw UserError("run dtype " + std::string(dtype_name(options.dtype)) + ": expected fp32, bf16 or fp16");
  auto impl = std::make_unique<Impl>();
  impl->config = HunyuanVideo15TransformerConfig::load(dir);
  impl->options = options;
  check_per_role_keys(options.attention.config, hunyuanvideo15_attention_roles(impl->config, options.dtype),
                      "HunyuanVideo15Transformer3DModel (" + dir + ")");
  const parallel::Communicator* tp = options.tensor_parallel.get();
  if (tp && impl->config.mlp_dim() % tp->size() != 0)
    throw UserError("HunyuanVideo15Transformer3DModel (" + dir + "): the FFN's " +
                    std::to_string(impl->config.mlp_dim()) + " columns do not split over " +
                    std::to_string(tp->size()) +
                    " tensor-parallel ranks; expected a tensor-parallel size that divides it");
  // Attention layers first: a backend that cannot run the model, or heads that do not split over the
  // ranks, fail before the weights are read.
  for (std::int64_t i = 0; i < impl->config.num_refiner_layers; ++i)
    impl->refiner.push_back(
        std::make_unique<hv15::RefinerBlock>(i, impl->config, options.attention, options.dtype, options.device));
  for (std::int64_t i = 0; i < impl->config.num_layers; ++i)
    impl->blocks.push_back(std::make_unique<hv15::Block>(i, impl->config, options.attention, options.dtype,
                                                         options.device, options.ulysses, options.tensor_parallel));
  WeightStore store(dir);
  impl->weights = hv15::load_weights(store, impl->config, options.dtype, options.device, tp);
  if (options.quantization == Quantization::Fp8) hv15::quantize_fp8(impl->weights);
  return HunyuanVideo15Transformer(std::move(impl));
}

namespace {

std::array<std::int64_t, 3> check_latents(const HunyuanVideo15TransformerConfig& c, const Tensor& hidden) {
  if (!hidden.defined() || hidden.ndim() != 5 || hidden.dim(1) != c.in_channels)
    throw UserError("hidden_states " + (hidden.defined() ? hidden.describe() : std::string("(missing)")) +
                    ": expected [B, " + std::to_string(c.in_channels) + ", F, H, W] (in_channels in config.json)");
  const auto patch = c.patch();
  std::array<std::int64_t, 3> grid{};
  for (int i = 0; i < 3; ++i) {
    if (hidden.dim(2 + i) == 0 || hidden.dim(2 + i) % patch[i] != 0)
      throw UserError("hidden_states " + hidden.describe() + ": frames, height and width must be positive multiples "
                      "of the patch " + shape_str({patch[0], patch[1], patch[2]}));
    grid[i] = hidden.dim(2 + i) / patch[i];
  }
  return grid;
}

// The timestep of each batch item as float64 [B] (one value is shared by the batch).
Tensor batch_timesteps(const Tensor& timestep, std::int64_t batch) {
  if (!timestep.defined() || timestep.ndim() > 1 || (timestep.numel() != 1 && timestep.numel() != batch))
    throw UserError("timestep " + (timestep.defined() ? timestep.describe() : std::string("(missing)")) +
                    ": expected [" + std::to_string(batch) + "] or [1]");
  std::vector<double> t = timestep.to_f64_vector();
  for (double v : t)
    if (!std::isfinite(v)) throw UserError("timestep " + timestep.describe() + " holds NaN or Inf");
  if (t.size() == 1) t.assign(static_cast<std::size_t>(batch), t[0]);
  return Tensor::from_f64(t, {batch}, DType::F64);
}

}  // namespace

Tensor HunyuanVideo15Transformer::forward(const Tensor& hidden_states, const Tensor& timestep,
                                          const Hv15TextInputs& text, const Hv15Capture& capture_fn) const {
  const HunyuanVideo15TransformerConfig& c = impl_->config;
  const hv15::Weights& w = impl_->weights;
  const Device device = impl_->options.device;
  const DType dtype = impl_->options.dtype;
  const hv15::Capture capture{&capture_fn};
  const auto grid = check_latents(c, hidden_states);
  const std::int64_t batch = hidden_states.dim(0), tokens = grid[0] * grid[1] * grid[2];
  const Tensor t = batch_timesteps(timestep, batch);

  if (impl_->rope_grid != grid || impl_->rope.cos.device() != device) {
    impl_->rope = hv15::rope_tables(c.rope_axes_dim, grid, c.rope_theta, device);
    impl_->rope_grid = grid;
  }
  capture("rope.cos", impl_->rope.cos);
  capture("rope.sin", impl_->rope.sin);

  const Tensor temb = hv15::timestep_embedding(t, w.time_1, w.time_2, dtype, device);
  capture("time_embed.out", temb);
  hv15::Streams s;
  s.video = ops::patch_embed_3d(ops::cast(hidden_states.to(device), dtype), w.x_embed.weight, w.x_embed.bias, c.patch());
  capture("x_embedder.out", s.video);
  const hv15::TextStream ts = hv15::text_stream(w, c, impl_->refiner, text, t, dtype, device, capture);
  s.text = ts.tokens;
  if (capture.on()) capture("transformer_blocks.0.attn.backend.key_valid", hv15::packed_mask(ts, tokens));

  // Ulysses: from here to the output projection the video stream is this rank's tokens only (the
  // modulation, norms and FFNs are per token); the text stream stays whole on every rank. The token
  // shards are the Wan ones (generic over [B, S, C]).
  parallel::Communicator* ulysses =
      impl_->options.ulysses && impl_->options.ulysses->size() > 1 ? impl_->options.ulysses.get() : nullptr;
  const wan::TokenRange shard = ulysses ? wan::token_shard(*ulysses, tokens) : wan::TokenRange{0, tokens};
  const hv15::RopeTables rope = ulysses ? hv15::slice_rope(impl_->rope, shard.start, shard.length) : impl_->rope;
  if (ulysses) s.video = wan::slice_tokens(s.video, shard);

  const Tensor silu_temb = ops::silu(temb);
  for (std::size_t i = 0; i < impl_->blocks.size(); ++i) {
    const bool last = i + 1 == impl_->blocks.size();
    s = impl_->blocks[i]->forward(w.blocks[i], s, silu_temb, ts.valid, rope, !last, capture);
  }

  // AdaLayerNormContinuous: scale first, then shift (the blocks' adaLN-Zero chunks put shift first).
  const ops::TokenModulation mod = hv15::batch_modulation(silu_temb, w.norm_out, 2, shard.length);
  Tensor x = ops::layer_norm_modulated(s.video, 1e-6f, mod, /*shift_k=*/1, /*scale_k=*/0);
  capture("norm_out.out", x);
  x = ops::linear(x, w.proj_out.weight, w.proj_out.bias);
  if (ulysses) x = wan::gather_tokens(*ulysses, x);  // every rank returns the whole prediction
  if (capture.on() && c.patch() == std::array<std::int64_t, 3>{1, 1, 1}) capture("proj_out.out", x);
  return ops::unpatchify_3d(x, grid, c.patch(), c.out_channels);
}

namespace {

// [B, C, F, H, W] latents followed by zero channels up to `channels` (text to video: zero conditioning
// latents and mask).
Tensor with_zero_condition(const Tensor& latents, std::int64_t channels, DType dtype) {
  const Tensor x = ops::cast(latents, dtype);
  if (x.dim(1) == channels) return x;
  const std::int64_t b = x.dim(0), per_item = x.numel() / b;
  Tensor out = Tensor::zeros({b, channels, x.dim(2), x.dim(3), x.dim(4)}, dtype, x.device());
  const Tensor src = x.reshape({b, per_item}), dst = out.reshape({b, out.numel() / b});
  for (std::int64_t i = 0; i < b; ++i) {
    Tensor row = dst.narrow0(i, 1).reshape({out.numel() / b});
    row.narrow0(0, per_item).copy_from(src.narrow0(i, 1).reshape({per_item}));
  }
  return out;
}

Tensor optional_input(const Conditioning& c, const char* name) {
  const auto it = c.tensors.find(name);
  return it == c.tensors.end() ? Tensor() : it->second;
}

}  // namespace

Tensor HunyuanVideo15Transformer::predict(const Tensor& latents, double timestep, const Conditioning& conditioning) const {
  const HunyuanVideo15TransformerConfig& c = impl_->config;
  if (latents.ndim() != 5 || (latents.dim(1) != c.out_channels && latents.dim(1) != c.in_channels) ||
      latents.dim(1) > c.in_channels)
    throw UserError("latents " + latents.describe() + ": expected [B, " + std::to_string(c.out_channels) +
                    ", F, H, W] (out_channels in config.json)");
  const DType dtype = impl_->options.dtype;
  Hv15TextInputs text;
  text.encoder_hidden_states = conditioning.at(kHv15TextInput);
  text.encoder_attention_mask = conditioning.at(kHv15TextMask);
  text.encoder_hidden_states_2 = conditioning.at(kHv15GlyphInput);
  text.encoder_attention_mask_2 = conditioning.at(kHv15GlyphMask);
  text.image_embeds = optional_input(conditioning, kHv15ImageInput);
  // The pipeline passes t.to(latents.dtype): a bf16 run sees 936 for 937.5.
  const Tensor t = Tensor::from_f64({timestep}, {1}, dtype);
  return ops::cast(forward(with_zero_condition(latents.to(impl_->options.device), c.in_channels, dtype), t, text),
                   DType::F32);
}

std::vector<Resolution> HunyuanVideo15Transformer::attention_resolutions() const {
  std::vector<Resolution> r;
  if (!impl_->blocks.empty()) r.push_back(impl_->blocks.front()->layer().resolution());
  if (!impl_->refiner.empty()) r.push_back(impl_->refiner.front()->layer().resolution());
  return r;
}

}  // namespace dattn
