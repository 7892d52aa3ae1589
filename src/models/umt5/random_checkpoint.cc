// write_random_umt5_encoder: a umT5 encoder checkpoint with seeded random weights.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "dattn/core/error.h"
#include "dattn/io/safetensors_writer.h"
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

void write_random_umt5_encoder(const std::string& dir, const Umt5Config& config, std::uint64_t seed) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw UserError("cannot create '" + dir + "': " + ec.message());
  // Round-trip through the reader so a config dattn would refuse is never written.
  const nlohmann::json cfg_json = umt5_config_json(config);
  (void)Umt5Config::from_json(cfg_json, dir + "/config.json");
  {
    std::ofstream cfg(fs::path(dir) / "config.json");
    cfg << cfg_json.dump(2) << "\n";
    if (!cfg) throw UserError("cannot write '" + (fs::path(dir) / "config.json").string() + "'");
  }
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<WrittenTensor> tensors;
  for (const auto& t : umt5_encoder_tensors(config)) {
    std::vector<float> values(static_cast<std::size_t>(shape_numel(t.shape)));
    const float fan_in_scale = 1.0f / std::sqrt(static_cast<float>(t.shape.back()));
    for (auto& v : values) {
      switch (t.kind) {
        case Planned::Embedding: v = normal(rng); break;
        case Planned::Linear: v = fan_in_scale * normal(rng); break;
        case Planned::Bias: v = 0.1f * normal(rng); break;
        case Planned::Gain: v = 1.0f + 0.1f * normal(rng); break;
      }
    }
    WrittenTensor w{t.name, "F32", t.shape, std::vector<std::uint8_t>(values.size() * sizeof(float))};
    std::memcpy(w.bytes.data(), values.data(), w.bytes.size());
    tensors.push_back(std::move(w));
  }
  write_safetensors((fs::path(dir) / "model.safetensors").string(), tensors, {{"format", "pt"}});
}

}  // namespace dattn
