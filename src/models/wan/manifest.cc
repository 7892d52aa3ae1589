// The parameter list of WanTransformer3DModel, in diffusers' module order.
#include "dattn/models/wan/manifest.h"

namespace dattn {
namespace {

struct Builder {
  std::vector<ParamSpec> out;
  void linear(const std::string& name, std::int64_t out_f, std::int64_t in_f, bool fp32 = false) {
    out.push_back({name + ".weight", {out_f, in_f}, ParamKind::Weight, fp32});
    out.push_back({name + ".bias", {out_f}, ParamKind::Bias, fp32});
  }
  void norm(const std::string& name, std::int64_t dim, bool with_bias, bool fp32) {
    out.push_back({name + ".weight", {dim}, ParamKind::NormWeight, fp32});
    if (with_bias) out.push_back({name + ".bias", {dim}, ParamKind::NormBias, fp32});
  }
  void attention(const std::string& name, std::int64_t dim) {
    linear(name + ".to_q", dim, dim);
    linear(name + ".to_k", dim, dim);
    linear(name + ".to_v", dim, dim);
    linear(name + ".to_out.0", dim, dim);
    norm(name + ".norm_q", dim, false, false);  // RMSNorm across heads
    norm(name + ".norm_k", dim, false, false);
  }
};

}  // namespace

std::vector<ParamSpec> wan_transformer_manifest(const WanTransformerConfig& c) {
  const std::int64_t d = c.inner_dim();
  const auto [pt, ph, pw] = c.patch_size;
  Builder b;
  b.out.push_back({"patch_embedding.weight", {d, c.in_channels, pt, ph, pw}, ParamKind::Weight, false});
  b.out.push_back({"patch_embedding.bias", {d}, ParamKind::Bias, false});
  b.linear("condition_embedder.time_embedder.linear_1", d, c.freq_dim, true);
  b.linear("condition_embedder.time_embedder.linear_2", d, d, true);
  b.linear("condition_embedder.time_proj", 6 * d, d);
  b.linear("condition_embedder.text_embedder.linear_1", d, c.text_dim);
  b.linear("condition_embedder.text_embedder.linear_2", d, d);
  for (std::int64_t i = 0; i < c.num_layers; ++i) {
    const std::string p = "blocks." + std::to_string(i);
    b.attention(p + ".attn1", d);
    b.attention(p + ".attn2", d);
    if (c.cross_attn_norm) b.norm(p + ".norm2", d, true, true);
    b.linear(p + ".ffn.net.0.proj", c.ffn_dim, d);
    b.linear(p + ".ffn.net.2", d, c.ffn_dim);
    b.out.push_back({p + ".scale_shift_table", {1, 6, d}, ParamKind::Modulation, true});
  }
  b.out.push_back({"scale_shift_table", {1, 2, d}, ParamKind::Modulation, true});
  b.linear("proj_out", c.out_features(), d);
  return b.out;
}

}  // namespace dattn
