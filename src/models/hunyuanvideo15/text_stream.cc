// The packed text stream (see text_stream.h).
#include "models/hunyuanvideo15/text_stream.h"

#include <string>

#include "dattn/core/error.h"
#include "dattn/ops/combine.h"
#include "dattn/ops/ops.h"
#include "models/hunyuanvideo15/rows.h"

namespace dattn::hv15 {
namespace {

// nn.LayerNorm's default eps: the ByT5 and image projections' norms.
constexpr float kProjectionEps = 1e-5f;

Tensor mlp_silu(const Tensor& x, const Linear& l1, const Linear& l2) {
  return ops::linear(ops::silu(ops::linear(x, l1.weight, l1.bias)), l2.weight, l2.bias);
}

// x + cond_type_embed[row], broadcast over the tokens.
Tensor add_type(const Tensor& x, const Weights& w, std::int64_t row) {
  return ops::add(x, w.cond_type_embed.narrow0(row, 1).reshape({w.cond_type_embed.dim(1)}));
}

void check_text(const Tensor& t, const std::string& name, std::int64_t batch, std::int64_t width,
                const std::string& field) {
  if (!t.defined() || t.ndim() != 3 || t.dim(0) != batch || t.dim(2) != width)
    throw UserError(name + " " + (t.defined() ? t.describe() : std::string("(missing)")) + ": expected [" +
                    std::to_string(batch) + ", L, " + std::to_string(width) + "] (" + field + " in config.json)");
}

bool all_zero(const Tensor& t) {
  for (double v : t.to_f64_vector())
    if (v != 0) return false;
  return true;
}

// The refined Qwen tokens [B, N1, D] (only the valid ones, N1 the longest item) and their counts.
Tensor qwen_tokens(const Weights& w, const std::vector<std::unique_ptr<RefinerBlock>>& refiner, const Tensor& text,
                   const RowLists& rows, const Tensor& timestep, DType dtype, Device device, const Capture& capture) {
  const std::vector<std::int64_t> n = counts(rows);
  const Tensor compact = gather_rows(ops::cast(text.to(device), dtype), rows);
  const Tensor pooled = ops::cast(ops::mean_rows(compact, n), dtype);
  capture("context_embedder.pooled_projections", pooled);
  const Tensor temb = ops::add(timestep_embedding(timestep, w.refiner_time_1, w.refiner_time_2, dtype, device),
                               mlp_silu(pooled, w.refiner_text_1, w.refiner_text_2));
  capture("context_embedder.time_text_embed.out", temb);
  Tensor h = ops::linear(compact, w.refiner_proj_in.weight, w.refiner_proj_in.bias);
  capture("context_embedder.proj_in.out", h);
  const Tensor silu_temb = ops::silu(temb);
  for (std::size_t i = 0; i < refiner.size(); ++i) h = refiner[i]->forward(w.refiner[i], h, silu_temb, n, capture);
  capture("context_embedder.out", h);
  return add_type(h, w, 0);
}

Tensor byt5_tokens(const Weights& w, const Tensor& glyph, const RowLists& rows, DType dtype, Device device,
                   const Capture& capture) {
  Tensor h = gather_rows(ops::cast(glyph.to(device), dtype), rows);
  h = ops::layer_norm(h, kProjectionEps, w.byt5_norm.weight, w.byt5_norm.bias);
  h = ops::gelu(ops::linear(h, w.byt5_1.weight, w.byt5_1.bias));
  h = ops::gelu(ops::linear(h, w.byt5_2.weight, w.byt5_2.bias));
  h = ops::linear(h, w.byt5_3.weight, w.byt5_3.bias);
  capture("context_embedder_2.out", h);
  return add_type(h, w, 1);
}

Tensor image_tokens(const Weights& w, const Tensor& image, DType dtype, Device device) {
  Tensor h = ops::layer_norm(ops::cast(image.to(device), dtype), kProjectionEps, w.image_norm_in.weight,
                             w.image_norm_in.bias);
  h = ops::linear(ops::gelu(ops::linear(h, w.image_1.weight, w.image_1.bias)), w.image_2.weight, w.image_2.bias);
  h = ops::layer_norm(h, kProjectionEps, w.image_norm_out.weight, w.image_norm_out.bias);
  return add_type(h, w, 2);
}

}  // namespace

Tensor timestep_embedding(const Tensor& timestep, const Linear& l1, const Linear& l2, DType dtype, Device device) {
  ops::TimestepEmbeddingParams p;  // Timesteps(256, flip_sin_to_cos=True, downscale_freq_shift=0)
  p.dim = 256;
  const Tensor proj = ops::cast(ops::timestep_embedding(timestep.to(device), p), dtype);
  return mlp_silu(proj, l1, l2);
}

TextStream text_stream(const Weights& w, const HunyuanVideo15TransformerConfig& config,
                       const std::vector<std::unique_ptr<RefinerBlock>>& refiner, const Hv15TextInputs& in,
                       const Tensor& timestep, DType dtype, Device device, const Capture& capture) {
  const std::int64_t batch = timestep.dim(0);
  check_text(in.encoder_hidden_states, "encoder_hidden_states", batch, config.text_embed_dim, "text_embed_dim");
  check_text(in.encoder_hidden_states_2, "encoder_hidden_states_2", batch, config.text_embed_2_dim, "text_embed_2_dim");
  const RowLists qwen = valid_positions(in.encoder_attention_mask, batch, in.encoder_hidden_states.dim(1),
                                        "encoder_attention_mask");
  const RowLists byt5 = valid_positions(in.encoder_attention_mask_2, batch, in.encoder_hidden_states_2.dim(1),
                                        "encoder_attention_mask_2");
  for (std::int64_t b = 0; b < batch; ++b)
    if (qwen[b].empty())  // diffusers' pooled projection would be 0/0
      throw UserError("encoder_attention_mask: batch item " + std::to_string(b) +
                      " has no valid text token (at least one is expected)");
  // T2V passes zero image embeddings (diffusers: torch.all(image_embeds == 0)): those tokens are masked.
  const bool with_image = in.image_embeds.defined() && !all_zero(in.image_embeds);
  if (with_image) check_text(in.image_embeds, "image_embeds", batch, config.image_embed_dim, "image_embed_dim");

  const Tensor q = qwen_tokens(w, refiner, in.encoder_hidden_states, qwen, timestep, dtype, device, capture);
  const Tensor g = max_count(byt5) > 0 ? byt5_tokens(w, in.encoder_hidden_states_2, byt5, dtype, device, capture)
                                       : Tensor();
  const Tensor img = with_image ? image_tokens(w, in.image_embeds, dtype, device) : Tensor();
  const std::int64_t n_img = with_image ? img.dim(1) : 0;

  TextStream s;
  std::int64_t longest = 0;
  for (std::int64_t b = 0; b < batch; ++b) {
    s.valid.push_back(n_img + static_cast<std::int64_t>(byt5[b].size() + qwen[b].size()));
    longest = std::max(longest, s.valid.back());
  }
  s.tokens = Tensor::zeros({batch, longest, config.inner_dim()}, dtype, device);
  for (std::int64_t b = 0; b < batch; ++b) {
    const auto n2 = static_cast<std::int64_t>(byt5[b].size()), n1 = static_cast<std::int64_t>(qwen[b].size());
    if (with_image) copy_rows(s.tokens, b, 0, img, 0, n_img);
    if (n2) copy_rows(s.tokens, b, n_img, g, 0, n2);
    copy_rows(s.tokens, b, n_img + n2, q, 0, n1);
  }
  s.packed_length = (in.image_embeds.defined() ? in.image_embeds.dim(1) : 0) + in.encoder_hidden_states_2.dim(1) +
                    in.encoder_hidden_states.dim(1);
  capture("packed.encoder_hidden_states", s.tokens);
  if (capture.on()) capture("packed.encoder_attention_mask", packed_mask(s, 0));
  return s;
}

Tensor packed_mask(const TextStream& s, std::int64_t prefix) {
  const auto batch = static_cast<std::int64_t>(s.valid.size()), width = prefix + s.packed_length;
  std::vector<float> m(static_cast<std::size_t>(batch * width), 0.0f);
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t i = 0; i < prefix + s.valid[b]; ++i) m[b * width + i] = 1.0f;
  return Tensor::from_f32(m, {batch, width});
}

}  // namespace dattn::hv15
