// Umt5Encoder: loading and the encoder forward (see include/dattn/models/umt5.h).
#include <cstring>

#include "dattn/attention/registry.h"
#include "dattn/core/error.h"
#include "dattn/core/run_context.h"
#include "dattn/core/stage_timer.h"
#include "dattn/io/weight_store.h"
#include "dattn/models/umt5.h"
#include "dattn/ops/ops.h"
#include "models/umt5/position_bias.h"

namespace dattn {
namespace {

struct Layer {
  Tensor attn_norm, q, k, v, o;
  Tensor bias_table;  // [num_buckets, heads] float32 on the run device: each layer's mask is built there
                      // (T5: layer 0 only, its mask serves every layer)
  Tensor ff_norm, wi_0, wi_1, wo;
};

}  // namespace

struct Umt5Encoder::Impl {
  Umt5Config config;
  Umt5RunOptions options;
  // [vocab, d_model] run dtype, kept on the host: a prompt's rows are gathered there and uploaded in one
  // copy (B x S x d_model, 4 MiB for one 512-token umT5-XXL prompt in bf16), so the 2 GiB table of
  // umT5-XXL never occupies device memory and no gather kernel is needed.
  Tensor embedding;
  std::vector<Layer> layers;
  Tensor final_norm;
  const AttentionBackend* sdpa = nullptr;
  nlohmann::json sdpa_extra;

  Tensor embed(const std::vector<std::int64_t>& ids, std::int64_t batch, std::int64_t seq) const;
  Tensor attention(const Layer& l, const Tensor& x, const Tensor& add_mask) const;
  // Runs the stack; calls keep(i, tensor) for every output_hidden_states entry.
  template <class Keep>
  void run(const std::vector<std::int64_t>& ids, const std::vector<std::int64_t>& mask, std::int64_t batch,
           std::int64_t seq, Keep keep) const;
};

namespace {

// Ignored when present: the decoder half and LM head of a full encoder-decoder checkpoint.
bool outside_encoder(const std::string& name) {
  return name.rfind("decoder.", 0) == 0 || name == "lm_head.weight";
}

Layer load_layer(WeightStore& w, const Umt5Config& c, std::int64_t i, DType dt, Device dev) {
  const std::string p = "encoder.block." + std::to_string(i) + ".layer.";
  const std::int64_t inner = c.num_heads * c.d_kv;
  Layer l;
  l.attn_norm = w.take(p + "0.layer_norm.weight", dt, dev, {c.d_model});
  l.q = w.take(p + "0.SelfAttention.q.weight", dt, dev, {inner, c.d_model});
  l.k = w.take(p + "0.SelfAttention.k.weight", dt, dev, {inner, c.d_model});
  l.v = w.take(p + "0.SelfAttention.v.weight", dt, dev, {inner, c.d_model});
  l.o = w.take(p + "0.SelfAttention.o.weight", dt, dev, {c.d_model, inner});
  if (!c.shared_position_bias || i == 0)
    l.bias_table = w.take(p + "0.SelfAttention.relative_attention_bias.weight", DType::F32, dev,
                          {c.num_buckets, c.num_heads});
  l.ff_norm = w.take(p + "1.layer_norm.weight", dt, dev, {c.d_model});
  l.wi_0 = w.take(p + "1.DenseReluDense.wi_0.weight", dt, dev, {c.d_ff, c.d_model});
  l.wi_1 = w.take(p + "1.DenseReluDense.wi_1.weight", dt, dev, {c.d_ff, c.d_model});
  l.wo = w.take(p + "1.DenseReluDense.wo.weight", dt, dev, {c.d_model, c.d_ff});
  return l;
}

}  // namespace

Umt5Encoder Umt5Encoder::load(const std::string& dir, const Umt5RunOptions& options) {
  return load_with(dir, Umt5Config::load(dir), options);
}

Umt5Encoder Umt5Encoder::load_t5_family(const std::string& dir, const Umt5RunOptions& options) {
  return load_with(dir, Umt5Config::load_t5_family(dir), options);
}

Umt5Encoder Umt5Encoder::load_with(const std::string& dir, const Umt5Config& config, const Umt5RunOptions& options) {
  if (options.dtype != DType::F32 && options.dtype != DType::BF16)
    throw UserError("umT5 text encoder: dtype " + std::string(dtype_name(options.dtype)) +
                    " is not supported (fp32 or bf16; T5 feed-forward activations overflow fp16)");
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  impl->options = options;
  const Umt5Config& c = impl->config;
  const DType dt = options.dtype;
  WeightStore w(dir);
  // transformers ties encoder.embed_tokens to shared; a checkpoint may hold either name or both.
  const std::string own = "encoder.embed_tokens.weight";
  const bool has_own = w.contains(own);
  // A view into the mapped file when stored in the run dtype: a prompt reads a few hundred of its rows,
  // so the 2 GiB table of umT5-XXL is neither copied nor read whole.
  impl->embedding = w.take_mapped(has_own ? own : "shared.weight", dt, {c.vocab_size, c.d_model});
  if (has_own && w.contains("shared.weight")) w.take_mapped("shared.weight", dt, {c.vocab_size, c.d_model});
  for (std::int64_t i = 0; i < c.num_layers; ++i) impl->layers.push_back(load_layer(w, c, i, dt, options.device));
  impl->final_norm = w.take("encoder.final_layer_norm.weight", dt, options.device, {c.d_model});
  std::vector<std::string> extra;
  for (const auto& name : w.unused())
    if (!outside_encoder(name)) extra.push_back(name);
  if (!extra.empty()) {
    std::string list;
    for (std::size_t i = 0; i < extra.size() && i < 10; ++i) list += (i ? ", " : "") + extra[i];
    throw UserError(w.source() + ": " + std::to_string(extra.size()) + " tensor(s) that a " +
                    std::to_string(c.num_layers) + "-layer umT5 encoder does not use: " + list +
                    (extra.size() > 10 ? ", ..." : ""));
  }
  // umT5 attention is unscaled and adds a per-head position bias: exactly TORCH_SDPA with scale 1 and
  // an additive general mask, the one backend that takes such a mask.
  impl->sdpa = &backend_by_name("TORCH_SDPA");
  impl->sdpa_extra = extra_with_defaults(*impl->sdpa, nlohmann::json::object());
  return Umt5Encoder(std::move(impl));
}

Umt5Encoder::Umt5Encoder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Umt5Encoder::Umt5Encoder(Umt5Encoder&&) noexcept = default;
Umt5Encoder& Umt5Encoder::operator=(Umt5Encoder&&) noexcept = default;
Umt5Encoder::~Umt5Encoder() = default;

const Umt5Config& Umt5Encoder::config() const { return impl_->config; }
const Umt5RunOptions& Umt5Encoder::options() const { return impl_->options; }

Tensor Umt5Encoder::Impl::embed(const std::vector<std::int64_t>& ids, std::int64_t batch, std::int64_t seq) const {
  const std::int64_t d = config.d_model;
  const std::size_t row = static_cast<std::size_t>(d) * dtype_size(options.dtype);
  Tensor out = Tensor::empty({batch, seq, d}, options.dtype);
  const auto* table = static_cast<const std::uint8_t*>(embedding.data());
  auto* dst = static_cast<std::uint8_t*>(out.data());
  for (std::size_t t = 0; t < ids.size(); ++t) std::memcpy(dst + t * row, table + ids[t] * row, row);
  return out.to(options.device);
}

Tensor Umt5Encoder::Impl::attention(const Layer& l, const Tensor& x, const Tensor& add_mask) const {
  const std::int64_t b = x.dim(0), s = x.dim(1), h = config.num_heads, dk = config.d_kv;
  const Tensor q = ops::linear(x, l.q).reshape({b, s, h, dk});
  const Tensor k = ops::linear(x, l.k).reshape({b, s, h, dk});
  const Tensor v = ops::linear(x, l.v).reshape({b, s, h, dk});
  Tensor out = Tensor::empty({b, s, h, dk}, options.dtype, options.device);
  AttentionProblem p;
  p.shape.batch = b;
  p.shape.seq_q = p.shape.seq_k = s;
  p.shape.heads_q = p.shape.heads_kv = h;
  p.shape.head_dim = dk;
  p.shape.dtype = options.dtype;
  p.shape.mask = MaskKind::General;
  p.q = q.data(), p.k = k.data(), p.v = v.data(), p.out = out.data();
  p.scale = 1.0f;
  p.mask = GeneralMask{GeneralMaskType::Additive, add_mask.data(), h};
  if (options.device == Device::CUDA) p.stream = current_context(Device::CUDA).stream();  // where the ops run
  {
    const StageScope timed("attention");  // as AttentionLayer times its calls: --op-times' text encoder row
    run_attention(*sdpa, p, sdpa_extra, options.device);
  }
  return ops::linear(out.reshape({b, s, h * dk}), l.o);
}

template <class Keep>
void Umt5Encoder::Impl::run(const std::vector<std::int64_t>& input_ids, const std::vector<std::int64_t>& attention_mask,
                            std::int64_t batch, std::int64_t seq, Keep keep) const {
  const Impl& m = *this;
  const Umt5Config& c = m.config;
  if (batch < 1 || seq < 1) throw UserError("umT5 encode: batch and sequence length must be positive");
  const auto n = static_cast<std::size_t>(batch * seq);
  if (input_ids.size() != n || attention_mask.size() != n)
    throw UserError("umT5 encode: input_ids has " + std::to_string(input_ids.size()) + " and attention_mask " +
                    std::to_string(attention_mask.size()) + " entries, expected batch * seq = " + std::to_string(n));
  for (std::size_t t = 0; t < n; ++t)
    if (input_ids[t] < 0 || input_ids[t] >= c.vocab_size)
      throw UserError("umT5 encode: token id " + std::to_string(input_ids[t]) + " at position " + std::to_string(t) +
                      " is outside the vocabulary [0, " + std::to_string(c.vocab_size) + ")");
  const auto eps = static_cast<float>(c.layer_norm_epsilon);
  // Buckets and key validity are the same for every layer: computed (and on CUDA uploaded) once.
  const umt5::AttentionMasks masks(attention_mask, batch, seq, c.num_buckets, c.max_distance, m.options.device);
  // T5: layer 0's bias (and so its mask) serves every layer, built once.
  const Tensor shared_mask = c.shared_position_bias ? masks.for_layer(m.layers.at(0).bias_table) : Tensor();
  Tensor h = m.embed(input_ids, batch, seq);
  for (std::size_t i = 0; i < m.layers.size(); ++i) {
    const Layer& l = m.layers[i];
    keep(h);  // entry i: the input of layer i
    const Tensor add_mask = c.shared_position_bias ? shared_mask : masks.for_layer(l.bias_table);
    h = ops::add(h, m.attention(l, ops::rms_norm(h, eps, l.attn_norm), add_mask));
    const Tensor x = ops::rms_norm(h, eps, l.ff_norm);
    const Tensor gated = ops::mul(ops::gelu_tanh(ops::linear(x, l.wi_0)), ops::linear(x, l.wi_1));
    h = ops::add(h, ops::linear(gated, l.wo));
  }
  keep(ops::rms_norm(h, eps, m.final_norm));
}

Tensor Umt5Encoder::encode(const std::vector<std::int64_t>& input_ids, const std::vector<std::int64_t>& attention_mask,
                           std::int64_t batch, std::int64_t seq) const {
  Tensor last;
  impl_->run(input_ids, attention_mask, batch, seq, [&](const Tensor& t) { last = t; });
  return last;
}

std::vector<Tensor> Umt5Encoder::hidden_states(const std::vector<std::int64_t>& input_ids,
                                               const std::vector<std::int64_t>& attention_mask, std::int64_t batch,
                                               std::int64_t seq) const {
  std::vector<Tensor> out;
  impl_->run(input_ids, attention_mask, batch, seq, [&](const Tensor& t) { out.push_back(t); });
  return out;
}

}  // namespace dattn
