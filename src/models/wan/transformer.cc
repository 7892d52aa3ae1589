// WanTransformer3DModel: loading, input checks and the top-level forward (see transformer.h).
#include "dattn/models/wan/transformer.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dattn/core/error.h"
#include "dattn/io/weight_store.h"
#include "dattn/models/attention_roles.h"
#include "dattn/ops/combine.h"
#include "dattn/ops/ops.h"
#include "models/wan/block.h"
#include "models/wan/condition.h"
#include "models/wan/rope_tables.h"
#include "models/wan/sequence_shard.h"
#include "models/wan/weights.h"

namespace dattn {

struct WanTransformer::Impl {
  WanTransformerConfig config;
  WanRunOptions options;
  wan::Weights weights;
  std::vector<std::unique_ptr<wan::Block>> blocks;
  // The RoPE tables of the last latent grid: every denoising step runs the same grid, and building
  // them on the host and uploading costs milliseconds per forward.
  mutable std::array<std::int64_t, 3> rope_grid{-1, -1, -1};
  mutable wan::RopeTables rope;
};

WanTransformer::WanTransformer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
WanTransformer::~WanTransformer() = default;
WanTransformer::WanTransformer(WanTransformer&&) noexcept = default;
WanTransformer& WanTransformer::operator=(WanTransformer&&) noexcept = default;
const WanTransformerConfig& WanTransformer::config() const { return impl_->config; }
const WanRunOptions& WanTransformer::options() const { return impl_->options; }

WanTransformer WanTransformer::load(const std::string& dir, const WanRunOptions& options) {
  if (options.dtype != DType::F32 && options.dtype != DType::BF16 && options.dtype != DType::F16)
    throw UserError("run dtype " + std::string(dtype_name(options.dtype)) + ": expected fp32, bf16 or fp16");
  auto impl = std::make_unique<Impl>();
  impl->config = WanTransformerConfig::load(dir);
  impl->options = options;
  check_per_role_keys(options.attention.config, wan_attention_roles(impl->config, options.dtype),
                      "WanTransformer3DModel (" + dir + ")");
  const parallel::Communicator* tp = options.tensor_parallel.get();
  if (tp && impl->config.ffn_dim % tp->size() != 0)
    throw UserError("WanTransformer3DModel (" + dir + "): ffn_dim " + std::to_string(impl->config.ffn_dim) +
                    " does not split over " + std::to_string(tp->size()) +
                    " tensor-parallel ranks; expected a tensor-parallel size that divides it");
  // Blocks (and their attention layers) first: a backend that cannot run the model, or heads that do
  // not split over the ranks, fail before gigabytes of weights are read.
  for (std::int64_t i = 0; i < impl->config.num_layers; ++i)
    impl->blocks.push_back(std::make_unique<wan::Block>(i, impl->config, options.attention, options.dtype,
                                                        options.device, options.ulysses, options.tensor_parallel));
  WeightStore store(dir);
  impl->weights = wan::load_weights(store, impl->config, options.dtype, options.device, tp);
  if (options.quantization == Quantization::Fp8) wan::quantize_fp8(impl->weights);
  return WanTransformer(std::move(impl));
}

namespace {

struct Geometry {
  std::int64_t batch = 0, tokens = 0;
  std::array<std::int64_t, 3> grid{};
  bool per_token = false;
};

Geometry check_inputs(const WanTransformerConfig& c, const Tensor& hidden, const Tensor& timestep, const Tensor& text) {
  const auto [pt, ph, pw] = c.patch_size;
  if (!hidden.defined() || hidden.ndim() != 5 || hidden.dim(1) != c.in_channels)
    throw UserError("hidden_states " + (hidden.defined() ? hidden.describe() : std::string("(missing)")) +
                    ": expected [B, " + std::to_string(c.in_channels) + ", F, H, W] (in_channels in config.json)");
  for (int i = 0; i < 3; ++i)
    if (hidden.dim(2 + i) % c.patch_size[i] != 0 || hidden.dim(2 + i) == 0)
      throw UserError("hidden_states " + hidden.describe() + ": frames, height and width must be positive multiples "
                      "of patch_size " + shape_str({pt, ph, pw}));
  Geometry g;
  g.batch = hidden.dim(0);
  g.grid = {hidden.dim(2) / pt, hidden.dim(3) / ph, hidden.dim(4) / pw};
  g.tokens = g.grid[0] * g.grid[1] * g.grid[2];
  if (!text.defined() || text.ndim() != 3 || text.dim(0) != g.batch || text.dim(2) != c.text_dim || text.dim(1) == 0)
    throw UserError("encoder_hidden_states " + (text.defined() ? text.describe() : std::string("(missing)")) +
                    ": expected [" + std::to_string(g.batch) + ",L," + std::to_string(c.text_dim) +
                    "] (batch of hidden_states, text_dim in config.json)");
  const std::string want = shape_str({g.batch}) + " or per token " + shape_str({g.batch, g.tokens});
  if (!timestep.defined()) throw UserError("timestep is missing: expected " + want);
  if (timestep.ndim() == 2 && timestep.dim(0) == g.batch && timestep.dim(1) == g.tokens) {
    g.per_token = true;
  } else if (!(timestep.ndim() <= 1 && (timestep.numel() == g.batch || timestep.numel() == 1))) {
    throw UserError("timestep " + timestep.describe() + ": expected " + want);
  }
  return g;
}

// [B, S, D] tokens -> [B, D, F', H', W'], the Conv3d output layout diffusers' hook records.
Tensor tokens_to_channels(const Tensor& x, const std::array<std::int64_t, 3>& grid) {
  const std::int64_t b = x.dim(0), s = x.dim(1), d = x.dim(2);
  const auto v = x.to_f32_vector();
  std::vector<float> out(v.size());
  for (std::int64_t bi = 0; bi < b; ++bi)
    for (std::int64_t t = 0; t < s; ++t)
      for (std::int64_t c = 0; c < d; ++c) out[(bi * d + c) * s + t] = v[(bi * s + t) * d + c];
  return Tensor::from_f32(out, {b, d, grid[0], grid[1], grid[2]}, x.dtype());
}

}  // namespace

Tensor WanTransformer::forward(const Tensor& hidden_states, const Tensor& timestep,
                               const Tensor& encoder_hidden_states, const WanCapture& capture_fn) const {
  const WanTransformerConfig& c = impl_->config;
  const wan::Weights& w = impl_->weights;
  const Device device = impl_->options.device;
  const DType dtype = impl_->options.dtype;
  const wan::Capture capture{&capture_fn};
  const Geometry g = check_inputs(c, hidden_states, timestep, encoder_hidden_states);

  if (impl_->rope_grid != g.grid || impl_->rope.cos.device() != device) {
    impl_->rope = wan::rope_tables(c.attention_head_dim, c.rope_max_seq_len, g.grid, device);
    impl_->rope_grid = g.grid;
  }
  const wan::RopeTables& rope = impl_->rope;
  if (capture.on()) {
    capture("rope.cos", rope.cos.reshape({1, g.tokens, 1, c.attention_head_dim}));
    capture("rope.sin", rope.sin.reshape({1, g.tokens, 1, c.attention_head_dim}));
  }
  // Moved first, then converted on the device: the latents of a denoise loop are already there.
  Tensor x = ops::patch_embed_3d(ops::cast(hidden_states.to(device), dtype), w.patch_weight, w.patch_bias, c.patch_size);
  if (capture.on()) capture("patch_embedding.out", tokens_to_channels(x, g.grid));

  std::vector<double> t = timestep.to_f64_vector();
  for (double v : t)
    if (!std::isfinite(v)) throw UserError("timestep " + timestep.describe() + " holds NaN or Inf");
  if (!g.per_token && t.size() == 1) t.assign(g.batch, t[0]);  // one timestep for the whole batch
  const wan::Conditioning cond = wan::condition(w, c, t, g.per_token, g.batch, g.tokens,
                                                ops::cast(encoder_hidden_states.to(device), dtype), capture);

  // Ulysses: from here to the output projection every per-token step runs on this rank's tokens only.
  parallel::Communicator* ulysses =
      impl_->options.ulysses && impl_->options.ulysses->size() > 1 ? impl_->options.ulysses.get() : nullptr;
  const wan::TokenRange shard = ulysses ? wan::token_shard(*ulysses, g.tokens) : wan::TokenRange{0, g.tokens};
  const wan::RopeTables local_rope = ulysses ? wan::slice_rope(rope, shard) : rope;
  std::vector<std::int32_t> local_rows;
  if (ulysses) local_rows = wan::slice_rows(cond.row_of_token, g.batch, g.tokens, shard);
  const std::vector<std::int32_t>& rows = ulysses ? local_rows : cond.row_of_token;
  if (ulysses) x = wan::slice_tokens(x, shard);
  for (std::size_t i = 0; i < impl_->blocks.size(); ++i)
    x = impl_->blocks[i]->forward(w.blocks[i], x, cond.text, cond.timestep_proj, rows, local_rope, capture);

  // Output norm: shift and scale are scale_shift_table + temb (no SiLU), per distinct timestep row.
  const std::int64_t d = c.inner_dim();
  ops::TokenModulation mod{ops::add(w.scale_shift_table, cond.temb.reshape({-1, 1, d}), DType::F32), rows};
  x = ops::layer_norm_modulated(x, static_cast<float>(c.eps), mod, 0, 1);
  x = ops::linear(x, w.proj_out.weight, w.proj_out.bias);
  if (ulysses) x = wan::gather_tokens(*ulysses, x);  // every rank returns the whole prediction
  return ops::unpatchify_3d(x, g.grid, c.patch_size, c.out_channels);
}

Tensor WanTransformer::predict(const Tensor& latents, double timestep, const Conditioning& conditioning) const {
  const Tensor& text = conditioning.at(kWanTextInput);
  if (latents.ndim() != 5) throw UserError("latents " + latents.describe() + ": expected [B, C, F, H, W]");
  const std::int64_t batch = latents.dim(0);
  Tensor t;
  if (impl_->options.per_token_timesteps) {
    const auto& p = impl_->config.patch_size;
    const std::int64_t tokens = latents.dim(2) / p[0] * (latents.dim(3) / p[1]) * (latents.dim(4) / p[2]);
    t = Tensor::from_f64(std::vector<double>(static_cast<std::size_t>(batch * tokens), timestep), {batch, tokens},
                         DType::F64);
  } else {
    t = Tensor::from_f64({timestep}, {1}, DType::F64);
  }
  return ops::cast(forward(latents, t, text), DType::F32);
}

std::vector<Resolution> WanTransformer::attention_resolutions() const {
  if (impl_->blocks.empty()) return {};
  const wan::Block& b = *impl_->blocks.front();
  return {b.attn1().layer().resolution(), b.attn2().layer().resolution()};
}

}  // namespace dattn
