// The condition embedder (see condition.h).
#include "models/wan/condition.h"

#include <cstring>
#include <map>

#include "dattn/ops/ops.h"

namespace dattn::wan {

Tensor expand_rows(const Tensor& table, const std::vector<std::int32_t>& rows, const Shape& shape) {
  const Tensor host = table.to(Device::CPU);
  const std::int64_t width = table.dim(-1);
  const std::size_t row_bytes = static_cast<std::size_t>(width) * dtype_size(table.dtype());
  Tensor out = Tensor::empty({static_cast<std::int64_t>(rows.size()), width}, table.dtype());
  for (std::size_t i = 0; i < rows.size(); ++i)
    std::memcpy(static_cast<char*>(out.data()) + i * row_bytes,
                static_cast<const char*>(host.data()) + rows[i] * row_bytes, row_bytes);
  return out.reshape(shape).to(table.device());
}

Conditioning condition(const Weights& w, const WanTransformerConfig& config, const std::vector<double>& timesteps,
                       bool per_token, std::int64_t batch, std::int64_t tokens, const Tensor& text,
                       const Capture& capture) {
  const Device device = text.device();
  const DType dtype = text.dtype();
  const std::int64_t d = config.inner_dim();
  // Distinct timesteps: diffusers rounds them to float32 first, so equal float32 values share a row.
  std::map<float, std::int32_t> row_of_value;
  std::vector<double> distinct;
  std::vector<std::int32_t> row_of_entry;
  for (double t : timesteps) {
    auto [it, fresh] = row_of_value.try_emplace(static_cast<float>(t), static_cast<std::int32_t>(distinct.size()));
    if (fresh) distinct.push_back(static_cast<float>(t));
    row_of_entry.push_back(it->second);
  }
  Conditioning c;
  c.row_of_token.resize(static_cast<std::size_t>(batch * tokens));
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t s = 0; s < tokens; ++s)
      c.row_of_token[b * tokens + s] = per_token ? row_of_entry[b * tokens + s] : row_of_entry[b];

  ops::TimestepEmbeddingParams p;
  p.dim = static_cast<int>(config.freq_dim);  // Timesteps(freq_dim, flip_sin_to_cos=True, shift=0)
  const Tensor sinusoid =
      ops::timestep_embedding(Tensor::from_f64(distinct, {static_cast<std::int64_t>(distinct.size())}, DType::F64), p)
          .to(device);
  // The time MLP runs in float32 (its weights are kept in float32); temb is then cast to the run dtype.
  Tensor temb = ops::linear(ops::silu(ops::linear(sinusoid, w.time_1.weight, w.time_1.bias)), w.time_2.weight,
                            w.time_2.bias);
  c.temb = temb.to(dtype);
  c.timestep_proj = ops::linear(ops::silu(c.temb), w.time_proj.weight, w.time_proj.bias);
  c.text = ops::linear(ops::linear_gelu_tanh(text, w.text_1.weight, w.text_1.bias), w.text_2.weight, w.text_2.bias);
  if (capture.on()) {
    const std::vector<std::int32_t>& rows = per_token ? c.row_of_token : row_of_entry;
    const Shape lead = per_token ? Shape{batch, tokens} : Shape{batch};
    Shape temb_shape = lead, proj_shape = lead;
    temb_shape.push_back(d);
    proj_shape.push_back(6 * d);
    std::vector<std::int32_t> batch_rows(rows.begin(), rows.begin() + shape_numel(lead));
    capture("condition_embedder.temb", expand_rows(c.temb, batch_rows, temb_shape));
    capture("condition_embedder.timestep_proj", expand_rows(c.timestep_proj, batch_rows, proj_shape));
    capture("condition_embedder.text", c.text);
  }
  return c;
}

}  // namespace dattn::wan
