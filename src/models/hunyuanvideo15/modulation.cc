// Batch-row modulation (see modulation.h).
#include "models/hunyuanvideo15/modulation.h"

#include <vector>

#include "dattn/ops/combine.h"
#include "dattn/ops/ops.h"

namespace dattn::hv15 {
namespace {

std::vector<std::int32_t> rows_by_item(std::int64_t batch, std::int64_t tokens) {
  std::vector<std::int32_t> r(static_cast<std::size_t>(batch * tokens));
  for (std::size_t i = 0; i < r.size(); ++i) r[i] = static_cast<std::int32_t>(static_cast<std::int64_t>(i) / tokens);
  return r;
}

}  // namespace

ops::TokenModulation batch_modulation(const Tensor& silu_temb, const Linear& linear, std::int64_t k,
                                      std::int64_t tokens) {
  const std::int64_t b = silu_temb.dim(0), d = silu_temb.dim(1);
  Tensor p = ops::cast(ops::linear(silu_temb, linear.weight, linear.bias), DType::F32).reshape({b, k, d});
  return {p, rows_by_item(b, tokens)};
}

ops::TokenModulation with_tokens(const ops::TokenModulation& m, std::int64_t batch, std::int64_t tokens) {
  return {m.params, rows_by_item(batch, tokens)};
}

void capture_vector(const Capture& capture, const std::string& name, const ops::TokenModulation& m, int k) {
  if (!capture.on()) return;
  const std::int64_t b = m.params.dim(0), kk = m.params.dim(1), d = m.params.dim(2);
  const std::vector<float> v = m.params.to_f32_vector();
  std::vector<float> out(static_cast<std::size_t>(b * d));
  for (std::int64_t i = 0; i < b; ++i)
    for (std::int64_t c = 0; c < d; ++c) out[i * d + c] = v[(i * kk + k) * d + c];
  capture(name, Tensor::from_f32(out, {b, d}));
}

}  // namespace dattn::hv15
