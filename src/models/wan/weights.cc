// Loading WanTransformer3DModel weights by name, with a precise report of what does not match.
#include "models/wan/weights.h"

#include <algorithm>
#include <set>

#include "dattn/core/error.h"
#include "dattn/models/wan/manifest.h"

namespace dattn::wan {
namespace {

// diffusers drops these on load (_keys_to_ignore_on_load_unexpected): old checkpoints carry them.
bool ignored_on_load(const std::string& name) { return name.find("norm_added_q") != std::string::npos; }

std::string name_list(const std::vector<std::string>& names) {
  std::string s;  // built with += throughout: GCC 12 warns falsely (-Wrestrict) on "literal" + temporary
  for (std::size_t i = 0; i < names.size() && i < 8; ++i) (s += i ? ", " : "") += names[i];
  if (names.size() > 8) ((s += ", ... (") += std::to_string(names.size() - 8)) += " more)";
  return s;
}

void check_names(const WeightStore& store, const std::vector<ParamSpec>& manifest) {
  std::set<std::string> expected;
  std::vector<std::string> missing, unexpected;
  for (const auto& p : manifest) {
    expected.insert(p.name);
    if (!store.contains(p.name)) missing.push_back(p.name);
  }
  for (const auto& n : store.names())
    if (!expected.count(n) && !ignored_on_load(n)) unexpected.push_back(n);
  if (missing.empty() && unexpected.empty()) return;
  std::string msg = store.source() + ": the weights do not match config.json (WanTransformer3DModel):";
  if (!missing.empty()) (((msg += ' ') += std::to_string(missing.size())) += " missing: ") += name_list(missing) + ";";
  if (!unexpected.empty())
    (((msg += ' ') += std::to_string(unexpected.size())) += " unexpected: ") += name_list(unexpected) + ";";
  msg += " is config.json the one these weights were saved with?";
  throw UserError(msg);
}

}  // namespace

Weights load_weights(WeightStore& store, const WanTransformerConfig& config, DType dtype, Device device) {
  const auto manifest = wan_transformer_manifest(config);
  check_names(store, manifest);
  std::map<std::string, Tensor> t;
  for (const auto& p : manifest) t[p.name] = store.take(p.name, p.keep_fp32 ? DType::F32 : dtype, device, p.shape);
  const auto linear = [&](const std::string& name) { return Linear{t.at(name + ".weight"), t.at(name + ".bias")}; };
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
