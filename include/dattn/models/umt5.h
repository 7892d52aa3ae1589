#pragma once
// The umT5 text encoder (transformers' UMT5EncoderModel: the encoder stack only) and the pipeline step
// that turns its output into diffusers' prompt embeddings.
//
// umT5 is T5 v1.1 with one difference that matters here: every layer owns a relative position bias
// table (T5 has one, in layer 0, shared by all). Attention has no 1/sqrt(d) scaling; layer norms are
// RMS norms with a weight and no bias; the feed-forward is gated GELU (tanh approximation).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dattn/core/tensor.h"

namespace dattn {


struct Umt5Config {
  std::int64_t vocab_size = 0;
  std::int64_t d_model = 0;
  std::int64_t d_kv = 0;  // per-head width; heads * d_kv need not equal d_model
  std::int64_t d_ff = 0;
  std::int64_t num_layers = 0;
  std::int64_t num_heads = 0;
  std::int64_t num_buckets = 32;      // relative_attention_num_buckets
  std::int64_t max_distance = 128;    // relative_attention_max_distance
  double layer_norm_epsilon = 1e-6;

  // Dimensions are required; buckets, distance and epsilon default as in transformers' UMT5Config.
  // Throws UserError naming `source` and the field: a missing or bad field, a model that is not umT5
  // (t5 / mt5 share one bias table), a decoder, or a feed-forward other than gated GELU-tanh.
  static Umt5Config from_json(const nlohmann::json& j, const std::string& source);
  static Umt5Config load(const std::string& dir);  // dir/config.json
};

struct Umt5RunOptions {
  Device device = Device::CPU;
  DType dtype = DType::F32;  // fp32 or bf16 (fp16 overflows in T5 feed-forwards and is refused)
};

class Umt5Encoder {
 public:
  // A transformers checkpoint directory (text_encoder/): config.json and model.safetensors (or a
  // sharded index). The embedding is `encoder.embed_tokens.weight` or the tied `shared.weight`;
  // `decoder.*` and `lm_head.weight` of a full encoder-decoder checkpoint are ignored; any other
  // unused tensor is a UserError.
  static Umt5Encoder load(const std::string& dir, const Umt5RunOptions& options = {});
  Umt5Encoder(Umt5Encoder&&) noexcept;
  Umt5Encoder& operator=(Umt5Encoder&&) noexcept;
  ~Umt5Encoder();

  const Umt5Config& config() const;
  const Umt5RunOptions& options() const;

  // input_ids and attention_mask are [batch, seq] row-major (mask nonzero = a real token; masked keys
  // are hidden from every query). Returns last_hidden_state [batch, seq, d_model] in the run dtype on
  // the run device. Ids outside [0, vocab_size) are a UserError.
  Tensor encode(const std::vector<std::int64_t>& input_ids, const std::vector<std::int64_t>& attention_mask,
                std::int64_t batch, std::int64_t seq) const;

 private:
  struct Impl;
  explicit Umt5Encoder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dattn
