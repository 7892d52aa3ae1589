// Loading WanTransformer3DModel weights by name, with a precise report of what does not match.
#include "models/wan/weights.h"

#include "dattn/models/wan/manifest.h"
#include "models/param_loading.h"
#include "dattn/models/wan/tensor_parallel.h"

namespace dattn::wan {
namespace {

// diffusers drops these on load (_keys_to_ignore_on_load_unexpected): old checkpoints carry them.
bool ignored_on_load(const std::string& name) { return name.find("norm_added_q") != std::string::npos; }

}  // namespace

Weights load_weights(WeightStore& store, const WanTransformerConfig& config, DType dtype, Device device,
                     const parallel::Communicator* tensor_parallel) {
  const auto manifest = wan_transformer_manifest(config);
  models::ParamLoadOptions options{"WanTransformer3DModel", dtype, device, ignored_on_load, {}};
  if (tensor_parallel && tensor_parallel->size() > 1)
    options.slice = [&](const std::string& name) {
      return wan_tensor_parallel_slice(name, config, tensor_parallel->rank(), tensor_parallel->size());
    };
  const auto t = models::load_params(store, manifest, options);
  const auto linear = [&](const std::string& name) { return Linear{t.at(name + ".weight"), t.at(name + ".bias"), {}}; };
  const auto attention = [&](const std::string& name) {
    return AttentionWeights{linear(name + ".to_q"), linear(name + ".to_k"), linear(name + ".to_v"),
                            linear(name + ".to_out.0"), t.at(name + ".norm_q.weight"), t.at(name + ".norm_k.weight")};
  };
  Weights w;
  w.patch_weight = t.at("patch_embedding.weight");
  w.patch_bias = t.at("patch_embedding.bias");
  w.time_1 = linear("condition_embedder.time_embedder.linear_1");
  w.time_2 = linear("condition_embedder.time_embedder.linear_2");
  w.time_proj = linear("condition_embedder.time_proj");
  w.text_1 = linear("condition_embedder.text_embedder.linear_1");
  w.text_2 = linear("condition_embedder.text_embedder.linear_2");
  for (std::int64_t i = 0; i < config.num_layers; ++i) {
    const std::string p = "blocks." + std::to_string(i);
    BlockWeights b;
    b.attn1 = attention(p + ".attn1");
    b.attn2 = attention(p + ".attn2");
    if (config.cross_attn_norm) {
      b.norm2_weight = t.at(p + ".norm2.weight");
      b.norm2_bias = t.at(p + ".norm2.bias");
    }
    b.ffn_in = linear(p + ".ffn.net.0.proj");
    b.ffn_out = linear(p + ".ffn.net.2");
    b.scale_shift_table = t.at(p + ".scale_shift_table");
    w.blocks.push_back(std::move(b));
  }
  w.scale_shift_table = t.at("scale_shift_table");
  w.proj_out = linear("proj_out");
  return w;
}

}  // namespace dattn::wan
