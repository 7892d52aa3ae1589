// Qwen25VLTextEncoder: loading and the decoder-stack forward (see include/dattn/models/qwen2_5_vl.h).
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dattn/attention/problem.h"
#include "dattn/core/error.h"
#include "dattn/core/run_context.h"
#include "dattn/io/weight_store.h"
#include "dattn/models/attention_roles.h"
#include "dattn/models/qwen2_5_vl.h"
#include "dattn/ops/ops.h"

namespace dattn {
namespace {

struct Layer {
  Tensor input_norm, q_w, q_b, k_w, k_b, v_w, v_b, o_w;
  Tensor post_norm, gate, up, down;
};

// Ignored when present: the LM head and the vision tower of a full Qwen2.5-VL checkpoint.
bool outside_text_model(const std::string& name) {
  return name == "lm_head.weight" || name.rfind("visual.", 0) == 0 || name.rfind("model.visual.", 0) == 0;
}

Layer load_layer(WeightStore& w, const std::string& prefix, const Qwen25VLTextConfig& c, std::int64_t i, DType dt,
                 Device dev) {
  const std::string p = prefix + "layers." + std::to_string(i) + ".";
  const std::int64_t hd = c.hidden_size, q_out = c.num_heads * c.head_dim, kv_out = c.num_kv_heads * c.head_dim;
  Layer l;
  l.input_norm = w.take(p + "input_layernorm.weight", dt, dev, {hd});
  l.q_w = w.take(p + "self_attn.q_proj.weight", dt, dev, {q_out, hd});
  l.q_b = w.take(p + "self_attn.q_proj.bias", dt, dev, {q_out});
  l.k_w = w.take(p + "self_attn.k_proj.weight", dt, dev, {kv_out, hd});
  l.k_b = w.take(p + "self_attn.k_proj.bias", dt, dev, {kv_out});
  l.v_w = w.take(p + "self_attn.v_proj.weight", dt, dev, {kv_out, hd});
  l.v_b = w.take(p + "self_attn.v_proj.bias", dt, dev, {kv_out});
  l.o_w = w.take(p + "self_attn.o_proj.weight", dt, dev, {hd, q_out});
  l.post_norm = w.take(p + "post_attention_layernorm.weight", dt, dev, {hd});
  l.gate = w.take(p + "mlp.gate_proj.weight", dt, dev, {c.intermediate_size, hd});
  l.up = w.take(p + "mlp.up_proj.weight", dt, dev, {c.intermediate_size, hd});
  l.down = w.take(p + "mlp.down_proj.weight", dt, dev, {hd, c.intermediate_size});
  return l;
}

// The key padding of one call: lengths when every row is a prefix of real tokens (right padding, the
// tokenizer's), else a uint8 [B, S] mask on the run device.
struct KeyPadding {
  std::vector<std::int64_t> lengths;
  Tensor mask;  // I8 bytes 0/1; undefined with lengths
  bool any = false;
};

KeyPadding key_padding(const std::vector<std::int64_t>& m, std::int64_t batch, std::int64_t seq, Device dev) {
  KeyPadding k;
  bool prefix = true;
  for (std::int64_t b = 0; b < batch; ++b) {
    std::int64_t n = 0;
    while (n < seq && m[b * seq + n] != 0) ++n;
    for (std::int64_t j = n; j < seq; ++j) prefix &= m[b * seq + j] == 0;
    k.lengths.push_back(n);
    k.any |= n < seq;
  }
  if (prefix) {
    if (!k.any) k.lengths.clear();  // every key valid: plain causal
    return k;
  }
  k.lengths.clear();
  k.any = true;
  Tensor host = Tensor::empty({batch, seq}, DType::I8);
  auto* bytes = static_cast<std::uint8_t*>(host.data());
  for (std::size_t t = 0; t < m.size(); ++t) bytes[t] = m[t] != 0 ? 1 : 0;
  k.mask = host.to(dev);
  return k;
}

}  // namespace

struct Qwen25VLTextEncoder::Impl {
  Qwen25VLTextConfig config;
  Qwen25VLRunOptions options;
  // [vocab, hidden] in the run dtype on the host: a prompt's rows are gathered there and uploaded in one
  // copy, so the table (1 GB for Qwen2.5-VL-7B in bf16) never occupies device memory.
  Tensor embedding;
  std::vector<Layer> layers;
  Tensor final_norm;
  std::unique_ptr<AttentionLayer> attention;

  Tensor embed(const std::vector<std::int64_t>& ids, std::int64_t batch, std::int64_t seq) const;
  std::pair<Tensor, Tensor> rope_tables(std::int64_t seq) const;
  Tensor self_attention(const Layer& l, const Tensor& x, const std::pair<Tensor, Tensor>& rope,
                        const KeyPadding& pad) const;
  Tensor layer(const Layer& l, const Tensor& h, const std::pair<Tensor, Tensor>& rope, const KeyPadding& pad) const;
  // Runs the stack; calls keep(i, tensor) for entries 0 .. last of output_hidden_states.
  template <class Keep>
  void run(const std::vector<std::int64_t>& ids, const std::vector<std::int64_t>& mask, std::int64_t batch,
           std::int64_t seq, std::int64_t last, Keep keep) const;
};

Qwen25VLTextEncoder Qwen25VLTextEncoder::load(const std::string& dir, const Qwen25VLRunOptions& options) {
  if (options.dtype != DType::F32 && options.dtype != DType::BF16)
    throw UserError("Qwen2.5-VL text encoder: dtype " + std::string(dtype_name(options.dtype)) +
                    " is not supported (fp32 or bf16)");
  auto impl = std::make_unique<Impl>();
  impl->config = Qwen25VLTextConfig::load(dir);
  impl->options = options;
  const Qwen25VLTextConfig& c = impl->config;
  // Resolved before any weight is read: a configuration that cannot run fails first.
  const AttentionRoleDecl decl = qwen2_5_vl_text_attention_roles(c, options.dtype, options.nominal_tokens).at(0);
  impl->attention = std::make_unique<AttentionLayer>(decl.module, decl.role, decl.category, options.attention,
                                                     decl.nominal, options.device);
  WeightStore w(dir);
  // Qwen2_5_VLTextModel saves its tensors bare; a text model saved inside a wrapper puts them under "model.".
  const std::string prefix = w.contains("embed_tokens.weight") ? "" : "model.";
  const DType dt = options.dtype;
  // A view into the mapped file when stored in the run dtype (a prompt reads a few hundred rows).
  impl->embedding = w.take_mapped(prefix + "embed_tokens.weight", dt, {c.vocab_size, c.hidden_size});
  for (std::int64_t i = 0; i < c.num_layers; ++i)
    impl->layers.push_back(load_layer(w, prefix, c, i, dt, options.device));
  impl->final_norm = w.take(prefix + "norm.weight", dt, options.device, {c.hidden_size});
  std::vector<std::string> extra;
  for (const auto& name : w.unused())
    if (!outside_text_model(name)) extra.push_back(name);
  if (!extra.empty()) {
    std::string list;
    for (std::size_t i = 0; i < extra.size() && i < 10; ++i) list += (i ? ", " : "") + extra[i];
    throw UserError(w.source() + ": " + std::to_string(extra.size()) + " tensor(s) that a " +
                    std::to_string(c.num_layers) + "-layer Qwen2.5-VL text model does not use: " + list +
                    (extra.size() > 10 ? ", ..." : ""));
  }
  return Qwen25VLTextEncoder(std::move(impl));
}

Qwen25VLTextEncoder::Qwen25VLTextEncoder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Qwen25VLTextEncoder::Qwen25VLTextEncoder(Qwen25VLTextEncoder&&) noexcept = default;
Qwen25VLTextEncoder& Qwen25VLTextEncoder::operator=(Qwen25VLTextEncoder&&) noexcept = default;
Qwen25VLTextEncoder::~Qwen25VLTextEncoder() = default;

const Qwen25VLTextConfig& Qwen25VLTextEncoder::config() const { return impl_->config; }
const Qwen25VLRunOptions& Qwen25VLTextEncoder::options() const { return impl_->options; }
const AttentionLayer& Qwen25VLTextEncoder::attention_layer() const { return *impl_->attention; }

Tensor Qwen25VLTextEncoder::Impl::embed(const std::vector<std::int64_t>& ids, std::int64_t batch,
                                        std::int64_t seq) const {
  const std::size_t row = static_cast<std::size_t>(config.hidden_size) * dtype_size(options.dtype);
  Tensor out = Tensor::empty({batch, seq, config.hidden_size}, options.dtype);
  const auto* table = static_cast<const std::uint8_t*>(embedding.data());
  auto* dst = static_cast<std::uint8_t*>(out.data());
  for (std::size_t t = 0; t < ids.size(); ++t) std::memcpy(dst + t * row, table + ids[t] * row, row);
  return out.to(options.device);
}

// Qwen2.5-VL's multimodal RoPE gives each frequency pair one of three position streams (time, height,
// width; mrope_section pairs each). For text all three streams are the token index 0..S-1, so every
// section reads the same angle and it is plain 1-D rotate-half RoPE. Computed in float32 as transformers
// does (inverse frequencies, the angle product and cos/sin), so the tables round the same way.
std::pair<Tensor, Tensor> Qwen25VLTextEncoder::Impl::rope_tables(std::int64_t seq) const {
  const std::int64_t d = config.head_dim, half = d / 2;
  std::vector<float> inv(half), cos(seq * d), sin(seq * d);
  const auto theta = static_cast<float>(config.rope_theta);
  for (std::int64_t i = 0; i < half; ++i)
    inv[i] = 1.0f / std::pow(theta, static_cast<float>(2 * i) / static_cast<float>(d));
  for (std::int64_t s = 0; s < seq; ++s)
    for (std::int64_t i = 0; i < half; ++i) {
      const float angle = static_cast<float>(s) * inv[i];
      cos[s * d + i] = cos[s * d + i + half] = std::cos(angle);
      sin[s * d + i] = sin[s * d + i + half] = std::sin(angle);
    }
  return {Tensor::from_f32(cos, {seq, d}).to(options.device), Tensor::from_f32(sin, {seq, d}).to(options.device)};
}

Tensor Qwen25VLTextEncoder::Impl::self_attention(const Layer& l, const Tensor& x, const std::pair<Tensor, Tensor>& rope,
                                                 const KeyPadding& pad) const {
  const std::int64_t b = x.dim(0), s = x.dim(1), hq = config.num_heads, hkv = config.num_kv_heads;
  const std::int64_t d = config.head_dim;
  const Tensor q = ops::apply_rope_rotate_half(ops::linear(x, l.q_w, l.q_b).reshape({b, s, hq, d}), rope.first,
                                               rope.second);
  const Tensor k = ops::apply_rope_rotate_half(ops::linear(x, l.k_w, l.k_b).reshape({b, s, hkv, d}), rope.first,
                                               rope.second);
  const Tensor v = ops::linear(x, l.v_w, l.v_b).reshape({b, s, hkv, d});
  Tensor out = Tensor::empty({b, s, hq, d}, options.dtype, options.device);
  AttentionProblem p;
  p.shape.batch = b;
  p.shape.seq_q = p.shape.seq_k = s;
  p.shape.heads_q = hq;
  p.shape.heads_kv = hkv;  // grouped-query attention: the backend shares each kv head
  p.shape.head_dim = d;
  p.shape.dtype = options.dtype;
  p.shape.mask = MaskKind::Causal;  // plus the key padding below
  p.q = q.data(), p.k = k.data(), p.v = v.data(), p.out = out.data();
  p.key_lengths = pad.lengths;
  if (pad.mask.defined()) p.key_mask = static_cast<const std::uint8_t*>(pad.mask.data());
  if (options.device == Device::CUDA) p.stream = current_context(Device::CUDA).stream();  // where the ops run
  attention->forward(p);
  return ops::linear(out.reshape({b, s, hq * d}), l.o_w);
}

Tensor Qwen25VLTextEncoder::Impl::layer(const Layer& l, const Tensor& h, const std::pair<Tensor, Tensor>& rope,
                                        const KeyPadding& pad) const {
  const auto eps = static_cast<float>(config.rms_norm_eps);
  const Tensor a = ops::add(h, self_attention(l, ops::rms_norm(h, eps, l.input_norm), rope, pad));
  const Tensor x = ops::rms_norm(a, eps, l.post_norm);
  const Tensor gated = ops::mul(ops::silu(ops::linear(x, l.gate)), ops::linear(x, l.up));
  return ops::add(a, ops::linear(gated, l.down));
}

template <class Keep>
void Qwen25VLTextEncoder::Impl::run(const std::vector<std::int64_t>& ids, const std::vector<std::int64_t>& mask,
                                    std::int64_t batch, std::int64_t seq, std::int64_t last, Keep keep) const {
  const Qwen25VLTextConfig& c = config;
  if (batch < 1 || seq < 1) throw UserError("Qwen2.5-VL encode: batch and sequence length must be positive");
  const auto n = static_cast<std::size_t>(batch * seq);
  if (ids.size() != n || mask.size() != n)
    throw UserError("Qwen2.5-VL encode: input_ids has " + std::to_string(ids.size()) + " and attention_mask " +
                    std::to_string(mask.size()) + " entries, expected batch * seq = " + std::to_string(n));
  for (std::size_t t = 0; t < n; ++t)
    if (ids[t] < 0 || ids[t] >= c.vocab_size)
      throw UserError("Qwen2.5-VL encode: token id " + std::to_string(ids[t]) + " at position " + std::to_string(t) +
                      " is outside the vocabulary [0, " + std::to_string(c.vocab_size) + ")");
  const KeyPadding pad = key_padding(mask, batch, seq, options.device);
  const auto rope = rope_tables(seq);
  Tensor h = embed(ids, batch, seq);
  keep(0, h);
  for (std::int64_t i = 0; i < c.num_layers && i < last; ++i) {
    h = layer(layers[i], h, rope, pad);
    if (i + 1 < c.num_layers) keep(i + 1, h);  // the last layer's raw output is no entry
  }
  if (last == c.num_layers) keep(last, ops::rms_norm(h, static_cast<float>(c.rms_norm_eps), final_norm));
}

Tensor Qwen25VLTextEncoder::hidden_state(const std::vector<std::int64_t>& input_ids,
                                         const std::vector<std::int64_t>& attention_mask, std::int64_t batch,
                                         std::int64_t seq, std::int64_t index) const {
  const std::int64_t entries = impl_->config.num_layers + 1;
  if (index < -entries || index >= entries)
    throw UserError("Qwen2.5-VL hidden_state: index " + std::to_string(index) + " is outside [" +
                    std::to_string(-entries) + ", " + std::to_string(entries - 1) + "] (" +
                    std::to_string(entries) + " hidden states: embeddings, one per layer, the final norm)");
  const std::int64_t want = index < 0 ? index + entries : index;
  Tensor out;
  impl_->run(input_ids, attention_mask, batch, seq, want, [&](std::int64_t i, const Tensor& t) {
    if (i == want) out = t;
  });
  return out;
}

std::vector<Tensor> Qwen25VLTextEncoder::hidden_states(const std::vector<std::int64_t>& input_ids,
                                                       const std::vector<std::int64_t>& attention_mask,
                                                       std::int64_t batch, std::int64_t seq) const {
  std::vector<Tensor> out;
  impl_->run(input_ids, attention_mask, batch, seq, impl_->config.num_layers,
             [&](std::int64_t, const Tensor& t) { out.push_back(t); });
  return out;
}

}  // namespace dattn
