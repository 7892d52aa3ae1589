#pragma once
// The Qwen2.5-VL text model (transformers' Qwen2_5_VLTextModel: the language model without the vision
// tower or LM head), as HunyuanVideo-1.5 uses it for its first text encoder: a decoder stack run once
// over the whole prompt, whose hidden state of a chosen layer is the prompt embedding.
//
// Per layer: RMSNorm, q/k/v projections with bias, rotate-half RoPE, causal grouped-query attention
// with key padding (through an AttentionLayer of role "text_encoder.self", category "self"), o_proj,
// residual; RMSNorm, SwiGLU MLP (down(silu(gate(x)) * up(x))), residual. A final RMSNorm.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dattn/attention/config.h"
#include "dattn/attention/layer.h"
#include "dattn/core/tensor.h"

namespace dattn {

struct Qwen25VLTextConfig {
  std::int64_t vocab_size = 0;
  std::int64_t hidden_size = 0;
  std::int64_t intermediate_size = 0;
  std::int64_t num_layers = 0;    // num_hidden_layers
  std::int64_t num_heads = 0;     // num_attention_heads
  std::int64_t num_kv_heads = 0;  // num_key_value_heads (divides num_heads)
  std::int64_t head_dim = 0;      // hidden_size / num_heads (even)
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;

  // Reads transformers' config (transformers 5 `rope_parameters` or 4's `rope_theta` + `rope_scaling`;
  // a full Qwen2_5_VLConfig is read through its `text_config`). Throws UserError naming `source` and the
  // key for what is not implemented: a rope type other than default / mrope, sliding-window attention,
  // an activation other than silu, a layer type other than full_attention.
  static Qwen25VLTextConfig from_json(const nlohmann::json& j, const std::string& source);
  static Qwen25VLTextConfig load(const std::string& dir);  // dir/config.json
};

struct Qwen25VLRunOptions {
  Device device = Device::CPU;
  DType dtype = DType::F32;  // fp32 or bf16 (the checkpoint's bf16 weights are converted to it)
  AttentionSettings attention;
  // The sequence length the attention layer is resolved and checked for (any length runs later).
  std::int64_t nominal_tokens = 1108;
};

// The attention role of the text encoder's self-attention layers (category "self").
inline constexpr const char* kQwenTextEncoderRole = "text_encoder.self";

class Qwen25VLTextEncoder {
 public:
  // A transformers checkpoint directory (text_encoder/): config.json and model.safetensors (or a
  // sharded index), tensors named as Qwen2_5_VLTextModel saves them (optionally under "model.");
  // `lm_head.weight` and `visual.*` are ignored, any other unused tensor is a UserError. The attention
  // backend is resolved here (ConfigError when an explicit choice cannot run causal attention).
  static Qwen25VLTextEncoder load(const std::string& dir, const Qwen25VLRunOptions& options = {});
  Qwen25VLTextEncoder(Qwen25VLTextEncoder&&) noexcept;
  Qwen25VLTextEncoder& operator=(Qwen25VLTextEncoder&&) noexcept;
  ~Qwen25VLTextEncoder();

  const Qwen25VLTextConfig& config() const;
  const Qwen25VLRunOptions& options() const;
  const AttentionLayer& attention_layer() const;

  // transformers' output_hidden_states has num_layers + 1 entries: 0 = embed_tokens, i = the output of
  // layer i - 1 (1 <= i < num_layers), num_layers = the final norm's output (the last layer's raw output
  // is not an entry). `index` may count from the end as in Python (-3 = num_layers - 2). Only the layers
  // the entry needs are run: entry i < num_layers stops after layer i - 1 (exact, and faster).
  // input_ids and attention_mask are [batch, seq] row-major (mask nonzero = a real token; padding may be
  // anywhere, right padding runs as key lengths). Returns [batch, seq, hidden] in the run dtype on the
  // run device; padded rows are computed too (they attend to the valid keys before them), as in
  // transformers. Ids outside [0, vocab_size) and an index out of range are UserErrors.
  Tensor hidden_state(const std::vector<std::int64_t>& input_ids, const std::vector<std::int64_t>& attention_mask,
                      std::int64_t batch, std::int64_t seq, std::int64_t index) const;
  // Every entry (num_layers + 1 of them), for parity tests.
  std::vector<Tensor> hidden_states(const std::vector<std::int64_t>& input_ids,
                                    const std::vector<std::int64_t>& attention_mask, std::int64_t batch,
                                    std::int64_t seq) const;

 private:
  struct Impl;
  explicit Qwen25VLTextEncoder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dattn
