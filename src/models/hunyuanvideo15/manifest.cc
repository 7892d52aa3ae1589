// The parameter list of HunyuanVideo15Transformer3DModel, in diffusers' module order. No parameter is kept
// in float32 (the class declares no _keep_in_fp32_modules).
#include "dattn/models/hunyuanvideo15/manifest.h"

#include <string>

namespace dattn {
namespace {

struct Builder {
  std::vector<ParamSpec> out;
  void linear(const std::string& name, std::int64_t out_f, std::int64_t in_f) {
    out.push_back({name + ".weight", {out_f, in_f}, ParamKind::Weight});
    out.push_back({name + ".bias", {out_f}, ParamKind::Bias});
  }
  void layer_norm(const std::string& name, std::int64_t dim) {
    out.push_back({name + ".weight", {dim}, ParamKind::NormWeight});
    out.push_back({name + ".bias", {dim}, ParamKind::NormBias});
  }
  void rms_norm(const std::string& name, std::int64_t dim) {
    out.push_back({name + ".weight", {dim}, ParamKind::NormWeight});
  }
  // TimestepEmbedding: linear_1 (256 sinusoidal channels in), SiLU, linear_2.
  void timestep_embedder(const std::string& name, std::int64_t dim) {
    linear(name + ".linear_1", dim, 256);
    linear(name + ".linear_2", dim, dim);
  }
};

}  // namespace

std::vector<ParamSpec> hunyuanvideo15_transformer_manifest(const HunyuanVideo15TransformerConfig& c) {
  const std::int64_t d = c.inner_dim(), mlp = c.mlp_dim(), hd = c.attention_head_dim;
  const auto [pt, ph, pw] = c.patch();
  Builder b;
  b.out.push_back({"x_embedder.proj.weight", {d, c.in_channels, pt, ph, pw}, ParamKind::Weight});
  b.out.push_back({"x_embedder.proj.bias", {d}, ParamKind::Bias});
  b.layer_norm("image_embedder.norm_in", c.image_embed_dim);
  b.linear("image_embedder.linear_1", c.image_embed_dim, c.image_embed_dim);
  b.linear("image_embedder.linear_2", d, c.image_embed_dim);
  b.layer_norm("image_embedder.norm_out", d);

  const std::string ce = "context_embedder.";
  b.timestep_embedder(ce + "time_text_embed.timestep_embedder", d);
  b.linear(ce + "time_text_embed.text_embedder.linear_1", d, c.text_embed_dim);
  b.linear(ce + "time_text_embed.text_embedder.linear_2", d, d);
  b.linear(ce + "proj_in", d, c.text_embed_dim);
  for (std::int64_t i = 0; i < c.num_refiner_layers; ++i) {
    const std::string p = ce + "token_refiner.refiner_blocks." + std::to_string(i);
    b.layer_norm(p + ".norm1", d);
    for (const char* n : {".attn.to_q", ".attn.to_k", ".attn.to_v", ".attn.to_out.0"}) b.linear(p + n, d, d);
    b.layer_norm(p + ".norm2", d);
    b.linear(p + ".ff.net.0.proj", mlp, d);
    b.linear(p + ".ff.net.2", d, mlp);
    b.linear(p + ".norm_out.linear", 2 * d, d);
  }
  b.layer_norm("context_embedder_2.norm", c.text_embed_2_dim);
  b.linear("context_embedder_2.linear_1", kHv15ByT5ProjectionWidth, c.text_embed_2_dim);
  b.linear("context_embedder_2.linear_2", kHv15ByT5ProjectionWidth, kHv15ByT5ProjectionWidth);
  b.linear("context_embedder_2.linear_3", d, kHv15ByT5ProjectionWidth);
  b.timestep_embedder("time_embed.timestep_embedder", d);
  b.out.push_back({"cond_type_embed.weight", {3, d}, ParamKind::Embedding});

  for (std::int64_t i = 0; i < c.num_layers; ++i) {
    const std::string p = "transformer_blocks." + std::to_string(i);
    b.linear(p + ".norm1.linear", 6 * d, d);
    b.linear(p + ".norm1_context.linear", 6 * d, d);
    for (const char* n : {".attn.to_q", ".attn.to_k", ".attn.to_v", ".attn.add_q_proj", ".attn.add_k_proj",
                          ".attn.add_v_proj", ".attn.to_out.0", ".attn.to_add_out"})
      b.linear(p + n, d, d);
    for (const char* n : {".attn.norm_q", ".attn.norm_k", ".attn.norm_added_q", ".attn.norm_added_k"})
      b.rms_norm(p + n, hd);  // per head
    b.linear(p + ".ff.net.0.proj", mlp, d);
    b.linear(p + ".ff.net.2", d, mlp);
    b.linear(p + ".ff_context.net.0.proj", mlp, d);
    b.linear(p + ".ff_context.net.2", d, mlp);
  }
  b.linear("norm_out.linear", 2 * d, d);
  b.linear("proj_out", c.out_features(), d);
  return b.out;
}

}  // namespace dattn
