// Loading HunyuanVideo15Transformer3DModel weights by name (see weights.h).
#include "models/hunyuanvideo15/weights.h"

#include <map>
#include <string>

#include "dattn/models/hunyuanvideo15/manifest.h"
#include "dattn/models/hunyuanvideo15/tensor_parallel.h"
#include "models/param_loading.h"

namespace dattn::hv15 {
namespace {

// Rows of a [C * P, ...] tensor whose row index is c * P + p, reordered to p * C + c (on the host: once,
// at load).
Tensor rows_channel_last(const Tensor& t, std::int64_t channels, std::int64_t positions) {
  if (positions == 1) return t;
  const std::int64_t row = t.numel() / (channels * positions);
  const std::vector<float> v = t.to_f32_vector();
  std::vector<float> out(v.size());
  for (std::int64_t c = 0; c < channels; ++c)
    for (std::int64_t p = 0; p < positions; ++p)
      for (std::int64_t i = 0; i < row; ++i) out[(p * channels + c) * row + i] = v[(c * positions + p) * row + i];
  return Tensor::from_f32(out, t.shape(), t.dtype()).to(t.device());
}

}  // namespace

Weights load_weights(WeightStore& store, const HunyuanVideo15TransformerConfig& config, DType dtype, Device device,
                     const parallel::Communicator* tensor_parallel) {
  const auto manifest = hunyuanvideo15_transformer_manifest(config);
  models::ParamLoadOptions options{"HunyuanVideo15Transformer3DModel", dtype, device, {}, {}};
  if (tensor_parallel && tensor_parallel->size() > 1)
    options.slice = [&](const std::string& name) {
      return hunyuanvideo15_tensor_parallel_slice(name, config, tensor_parallel->rank(), tensor_parallel->size());
    };
  const auto t = models::load_params(store, manifest, options);
  const auto linear = [&](const std::string& n) { return Linear{t.at(n + ".weight"), t.at(n + ".bias"), {}}; };
  const auto norm = [&](const std::string& n) { return Norm{t.at(n + ".weight"), t.at(n + ".bias")}; };
  Weights w;
  w.x_embed = linear("x_embedder.proj");
  w.image_norm_in = norm("image_embedder.norm_in");
  w.image_1 = linear("image_embedder.linear_1");
  w.image_2 = linear("image_embedder.linear_2");
  w.image_norm_out = norm("image_embedder.norm_out");
  const std::string ce = "context_embedder.";
  w.refiner_time_1 = linear(ce + "time_text_embed.timestep_embedder.linear_1");
  w.refiner_time_2 = linear(ce + "time_text_embed.timestep_embedder.linear_2");
  w.refiner_text_1 = linear(ce + "time_text_embed.text_embedder.linear_1");
  w.refiner_text_2 = linear(ce + "time_text_embed.text_embedder.linear_2");
  w.refiner_proj_in = linear(ce + "proj_in");
  for (std::int64_t i = 0; i < config.num_refiner_layers; ++i) {
    const std::string p = ce + "token_refiner.refiner_blocks." + std::to_string(i);
    w.refiner.push_back({norm(p + ".norm1"), norm(p + ".norm2"), linear(p + ".attn.to_q"), linear(p + ".attn.to_k"),
                         linear(p + ".attn.to_v"), linear(p + ".attn.to_out.0"), linear(p + ".ff.net.0.proj"),
                         linear(p + ".ff.net.2"), linear(p + ".norm_out.linear")});
  }
  w.byt5_norm = norm("context_embedder_2.norm");
  w.byt5_1 = linear("context_embedder_2.linear_1");
  w.byt5_2 = linear("context_embedder_2.linear_2");
  w.byt5_3 = linear("context_embedder_2.linear_3");
  w.time_1 = linear("time_embed.timestep_embedder.linear_1");
  w.time_2 = linear("time_embed.timestep_embedder.linear_2");
  w.cond_type_embed = t.at("cond_type_embed.weight");
  for (std::int64_t i = 0; i < config.num_layers; ++i) {
    const std::string p = "transformer_blocks." + std::to_string(i);
    BlockWeights b;
    b.norm1 = linear(p + ".norm1.linear");
    b.norm1_context = linear(p + ".norm1_context.linear");
    b.to_q = linear(p + ".attn.to_q");
    b.to_k = linear(p + ".attn.to_k");
    b.to_v = linear(p + ".attn.to_v");
    b.add_q = linear(p + ".attn.add_q_proj");
    b.add_k = linear(p + ".attn.add_k_proj");
    b.add_v = linear(p + ".attn.add_v_proj");
    b.to_out = linear(p + ".attn.to_out.0");
    b.to_add_out = linear(p + ".attn.to_add_out");
    b.norm_q = t.at(p + ".attn.norm_q.weight");
    b.norm_k = t.at(p + ".attn.norm_k.weight");
    b.norm_added_q = t.at(p + ".attn.norm_added_q.weight");
    b.norm_added_k = t.at(p + ".attn.norm_added_k.weight");
    b.ff_in = linear(p + ".ff.net.0.proj");
    b.ff_out = linear(p + ".ff.net.2");
    b.ff_context_in = linear(p + ".ff_context.net.0.proj");
    b.ff_context_out = linear(p + ".ff_context.net.2");
    w.blocks.push_back(std::move(b));
  }
  w.norm_out = linear("norm_out.linear");
  const auto [pt, ph, pw] = config.patch();
  const Linear proj = linear("proj_out");
  w.proj_out = {rows_channel_last(proj.weight, config.out_channels, pt * ph * pw),
                rows_channel_last(proj.bias, config.out_channels, pt * ph * pw), {}};
  return w;
}

}  // namespace dattn::hv15
