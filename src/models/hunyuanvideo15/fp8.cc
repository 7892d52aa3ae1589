// The FP8 form of the HunyuanVideo-1.5 transformer's block linears (weights.h).
#include <initializer_list>

#include "dattn/ops/linear.h"
#include "dattn/ops/linear_fp8.h"
#include "dattn/ops/row_window.h"
#include "models/hunyuanvideo15/weights.h"

namespace dattn::hv15 {

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

void apply_into(const Linear& layer, const ops::LinearInput& x, const ops::RowWindow& into) {
  if (layer.fp8.defined())  // the FP8 epilogue writes a fresh tensor: one copy into the rows
    ops::copy_into(ops::linear_fp8(x.fp8(), layer.fp8, layer.bias), into);
  else
    ops::linear(x.tensor(), layer.weight, layer.bias, into);
}

Tensor apply_rows(const Linear& layer, const ops::RowWindow& x_rows, std::int64_t rows) {
  if (layer.fp8.defined()) return ops::linear_fp8(ops::copy_from(x_rows, rows), layer.fp8, layer.bias);
  return ops::linear(x_rows, rows, layer.weight, layer.bias);
}

Tensor apply_feed_forward(const Linear& in, const Linear& out, const Tensor& x) {
  if (in.fp8.defined() && out.fp8.defined()) return ops::feed_forward_fp8(x, in.fp8, in.bias, out.fp8, out.bias);
  return apply(out, apply_gelu_tanh(in, x));
}

void quantize_fp8(Weights& weights) {
  for (BlockWeights& b : weights.blocks)
    for (Linear* l : {&b.to_q, &b.to_k, &b.to_v, &b.add_q, &b.add_k, &b.add_v, &b.to_out, &b.to_add_out, &b.ff_in,
                      &b.ff_out, &b.ff_context_in, &b.ff_context_out}) {
      l->fp8 = ops::quantize_rows_e4m3(l->weight);
      l->weight = Tensor();
    }
}

}  // namespace dattn::hv15
