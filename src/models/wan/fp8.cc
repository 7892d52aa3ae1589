// The FP8 form of the Wan transformer's block linears (weights.h).
#include <initializer_list>

#include "dattn/ops/linear.h"
#include "dattn/ops/linear_fp8.h"
#include "models/wan/weights.h"

namespace dattn::wan {
namespace {

void quantize(Linear& l) {
  l.fp8 = ops::quantize_rows_e4m3(l.weight);
  l.weight = Tensor();
}

}  // namespace

Tensor apply(const Linear& layer, const Tensor& x) {
  return layer.fp8.defined() ? ops::linear_fp8(x, layer.fp8, layer.bias) : ops::linear(x, layer.weight, layer.bias);
}

Tensor apply(const Linear& layer, const ops::LinearInput& x) {
  return layer.fp8.defined() ? ops::linear_fp8(x.fp8(), layer.fp8, layer.bias)
                             : ops::linear(x.tensor(), layer.weight, layer.bias);
}

Tensor apply_gelu_tanh(const Linear& layer, const Tensor& x) {
  return layer.fp8.defined() ? ops::linear_fp8_gelu_tanh(x, layer.fp8, layer.bias)
                             : ops::linear_gelu_tanh(x, layer.weight, layer.bias);
}

Tensor apply_feed_forward(const Linear& in, const Linear& out, const Tensor& x) {
  if (in.fp8.defined() && out.fp8.defined()) return ops::feed_forward_fp8(x, in.fp8, in.bias, out.fp8, out.bias);
  return apply(out, apply_gelu_tanh(in, x));
}

void quantize_fp8(Weights& weights) {
  for (BlockWeights& b : weights.blocks) {
    for (AttentionWeights* a : {&b.attn1, &b.attn2})
      for (Linear* l : {&a->to_q, &a->to_k, &a->to_v, &a->to_out}) quantize(*l);
    quantize(b.ffn_in);
    quantize(b.ffn_out);
  }
}

}  // namespace dattn::wan
