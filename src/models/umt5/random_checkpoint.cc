// write_random_umt5_encoder: a umT5 encoder checkpoint with seeded random weights.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numbers>

#include "dattn/core/error.h"
#include "dattn/io/checkpoint_writer.h"
#include "dattn/models/umt5_random.h"

namespace dattn {
namespace {

struct Planned {
  std::string name;
  Shape shape;
  enum Kind { Embedding, Linear, Bias, Gain } kind;
};

std::vector<Planned> umt5_encoder_tensors(const Umt5Config& c) {
  const std::int64_t inner = c.num_heads * c.d_kv;
  std::vector<Planned> out = {{"shared.weight", {c.vocab_size, c.d_model}, Planned::Embedding}};
  for (std::int64_t i = 0; i < c.num_layers; ++i) {
    const std::string attn = "encoder.block." + std::to_string(i) + ".layer.0.";
    const std::string ffn = "encoder.block." + std::to_string(i) + ".layer.1.";
    for (const char* p : {"q", "k", "v"})
      out.push_back({attn + "SelfAttention." + p + ".weight", {inner, c.d_model}, Planned::Linear});
    out.push_back({attn + "SelfAttention.o.weight", {c.d_model, inner}, Planned::Linear});
    // umT5: every layer has its own bias table (T5 only layer 0).
    out.push_back({attn + "SelfAttention.relative_attention_bias.weight", {c.num_buckets, c.num_heads}, Planned::Bias});
    out.push_back({attn + "layer_norm.weight", {c.d_model}, Planned::Gain});
    out.push_back({ffn + "DenseReluDense.wi_0.weight", {c.d_ff, c.d_model}, Planned::Linear});
    out.push_back({ffn + "DenseReluDense.wi_1.weight", {c.d_ff, c.d_model}, Planned::Linear});
    out.push_back({ffn + "DenseReluDense.wo.weight", {c.d_model, c.d_ff}, Planned::Linear});
    out.push_back({ffn + "layer_norm.weight", {c.d_model}, Planned::Gain});
  }
  out.push_back({"encoder.final_layer_norm.weight", {c.d_model}, Planned::Gain});
  return out;
}

std::uint64_t mix64(std::uint64_t x) {  // splitmix64's finaliser
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// N(mean, stddev^2) values for one tensor. Element pair p depends only on (seed, name, p), so the
// fill runs on every core and a tensor's values do not depend on the others or on sharding.
void fill_normal(std::vector<float>& out, std::uint64_t seed, const std::string& name, float mean, float stddev) {
  std::uint64_t key = 0xCBF29CE484222325ULL;  // FNV-1a of the name
  for (unsigned char c : name) key = (key ^ c) * 0x100000001B3ULL;
  const std::uint64_t stream = mix64(seed ^ mix64(key));
  const auto n = static_cast<std::int64_t>(out.size());
  float* dst = out.data();
#pragma omp parallel for schedule(static)
  for (std::int64_t pair = 0; pair < (n + 1) / 2; ++pair) {
    const std::uint64_t bits = mix64(stream + static_cast<std::uint64_t>(pair));
    const double u1 = (static_cast<double>(bits >> 32) + 0.5) / 4294967296.0;  // (0, 1): log is finite
    const double u2 = static_cast<double>(bits & 0xFFFFFFFFu) / 4294967296.0;
    const double r = std::sqrt(-2.0 * std::log(u1)), a = 2.0 * std::numbers::pi * u2;
    dst[2 * pair] = mean + stddev * static_cast<float>(r * std::cos(a));
    if (2 * pair + 1 < n) dst[2 * pair + 1] = mean + stddev * static_cast<float>(r * std::sin(a));
  }
}

}  // namespace

nlohmann::json umt5_config_json(const Umt5Config& c) {
  return {{"architectures", {"UMT5EncoderModel"}},
          {"model_type", "umt5"},
          {"vocab_size", c.vocab_size},
          {"d_model", c.d_model},
          {"d_kv", c.d_kv},
          {"d_ff", c.d_ff},
          {"num_layers", c.num_layers},
          {"num_heads", c.num_heads},
          {"relative_attention_num_buckets", c.num_buckets},
          {"relative_attention_max_distance", c.max_distance},
          {"layer_norm_epsilon", c.layer_norm_epsilon},
          {"feed_forward_proj", "gated-gelu"},
          {"dense_act_fn", "gelu_new"},
          {"is_gated_act", true},
          {"is_encoder_decoder", false},
          {"tie_word_embeddings", true},
          {"pad_token_id", 0},
          {"eos_token_id", 1},
          {"dtype", "float32"}};
}

void write_random_umt5_encoder(const std::string& dir, const Umt5Config& config, std::uint64_t seed,
                               const RandomUmt5Options& options) {
  namespace fs = std::filesystem;
  if (options.dtype != DType::F32 && options.dtype != DType::BF16)
    throw UserError("umT5 text encoder weights: dtype " + std::string(dtype_name(options.dtype)) +
                    " is not supported (fp32 or bf16; dattn runs umT5 in those)");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw UserError("cannot create '" + dir + "': " + ec.message());
  // Round-trip through the reader so a config dattn would refuse is never written.
  nlohmann::json cfg_json = umt5_config_json(config);
  cfg_json["dtype"] = options.dtype == DType::BF16 ? "bfloat16" : "float32";
  (void)Umt5Config::from_json(cfg_json, dir + "/config.json");
  {
    std::ofstream cfg(fs::path(dir) / "config.json");
    cfg << cfg_json.dump(2) << "\n";
    if (!cfg) throw UserError("cannot write '" + (fs::path(dir) / "config.json").string() + "'");
  }
  const std::vector<Planned> planned = umt5_encoder_tensors(config);
  std::vector<PlannedTensor> plan;
  for (const auto& t : planned) plan.push_back({t.name, options.dtype, t.shape});
  // Streamed: one tensor in memory at a time (the largest, umT5-XXL's 256384 x 4096 embedding, is 4 GiB
  // as float32 scratch), written as transformers' save_pretrained names its files (model.safetensors,
  // or model-0000i-of-0000n.safetensors with model.safetensors.index.json above the shard size).
  std::vector<float> values;
  write_diffusers_weights(dir, "model", plan, options.max_shard_bytes, [&](std::size_t i, std::uint8_t* dst) {
    const Planned& t = planned[i];
    values.resize(static_cast<std::size_t>(shape_numel(t.shape)));
    const float fan_in_scale = 1.0f / std::sqrt(static_cast<float>(t.shape.back()));
    switch (t.kind) {
      case Planned::Embedding: fill_normal(values, seed, t.name, 0.0f, 1.0f); break;
      case Planned::Linear: fill_normal(values, seed, t.name, 0.0f, fan_in_scale); break;
      case Planned::Bias: fill_normal(values, seed, t.name, 0.0f, 0.1f); break;
      case Planned::Gain: fill_normal(values, seed, t.name, 1.0f, 0.1f); break;
    }
    from_f32(values.data(), options.dtype, dst, values.size());
  });
}

}  // namespace dattn
