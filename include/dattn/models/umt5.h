#pragma once
// The T5-family text encoders (the encoder stack only): umT5 (transformers' UMT5EncoderModel, Wan's
// text encoder) and T5 / mT5 / ByT5 (T5EncoderModel, HunyuanVideo-1.5's glyph encoder), one encoder
// driven by the config.
//
// umT5 is T5 v1.1 with one difference that matters here: every layer owns a relative position bias
// table, where T5 has one, in layer 0, shared by all (config: `shared_position_bias`). Attention has no
// 1/sqrt(d) scaling; layer norms are RMS norms with a weight and no bias; the feed-forward is gated GELU
// (tanh approximation), the only one implemented (ByT5 and T5 v1.1 use it; the original T5's ReLU is
// refused).
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
  // T5 / mT5 (model_type "t5", "mt5"): layer 0's relative_attention_bias serves every layer. umT5: each
  // layer has its own.
  bool shared_position_bias = false;

  // Dimensions are required; buckets, distance and epsilon default as in transformers' UMT5Config.
  // Throws UserError naming `source` and the field: a missing or bad field, a model that is not umT5
  // (t5 / mt5 share one bias table), a decoder, or a feed-forward other than gated GELU-tanh.
  static Umt5Config from_json(const nlohmann::json& j, const std::string& source);
  static Umt5Config load(const std::string& dir);  // dir/config.json
  // Any T5-family encoder: model_type "umt5", "t5" or "mt5" (the last two set shared_position_bias);
  // otherwise as from_json.
  static Umt5Config from_json_t5_family(const nlohmann::json& j, const std::string& source);
  static Umt5Config load_t5_family(const std::string& dir);
};
using T5EncoderConfig = Umt5Config;

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
  // The same for any T5-family checkpoint (Umt5Config::load_t5_family): a T5 / ByT5 one stores its bias
  // table in layer 0 only (and often only the tied `shared.weight`).
  static Umt5Encoder load_t5_family(const std::string& dir, const Umt5RunOptions& options = {});
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
  // transformers' output_hidden_states: num_layers + 1 entries, 0 = the embeddings, i = the output of
  // layer i - 1 (1 <= i < num_layers), the last = encode()'s result (the final norm's output).
  std::vector<Tensor> hidden_states(const std::vector<std::int64_t>& input_ids,
                                    const std::vector<std::int64_t>& attention_mask, std::int64_t batch,
                                    std::int64_t seq) const;

 private:
  struct Impl;
  explicit Umt5Encoder(std::unique_ptr<Impl> impl);
  static Umt5Encoder load_with(const std::string& dir, const Umt5Config& config, const Umt5RunOptions& options);
  std::unique_ptr<Impl> impl_;
};
using T5Encoder = Umt5Encoder;

}  // namespace dattn
