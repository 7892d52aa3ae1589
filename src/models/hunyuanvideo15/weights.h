#pragma once
// The tensors of a HunyuanVideo15Transformer3DModel grouped by module, loaded through the manifest.
#include <vector>

#include "dattn/core/tensor.h"
#include "dattn/io/weight_store.h"
#include "dattn/ops/linear_fp8.h"
#include "dattn/ops/row_window.h"
#include "dattn/models/hunyuanvideo15/config.h"
#include "dattn/parallel/communicator.h"

namespace dattn::hv15 {

struct Linear {
  Tensor weight, bias;
  ops::Fp8Matrix fp8;  // when defined, the layer runs in FP8 and `weight` is released
};

// linear / linear_gelu_tanh / linear into rows, through the layer's FP8 form when it has one.
Tensor apply(const Linear& layer, const Tensor& x);
// The same for an input several linears read (quantized once when they are FP8).
Tensor apply(const Linear& layer, const ops::LinearInput& x);
Tensor apply_gelu_tanh(const Linear& layer, const Tensor& x);
// apply(out, apply_gelu_tanh(in, x)); two FP8 layers pass the hidden activation on quantized.
Tensor apply_feed_forward(const Linear& in, const Linear& out, const Tensor& x);
void apply_into(const Linear& layer, const ops::LinearInput& x, const ops::RowWindow& into);
// The layer over rows [x_rows.row, + rows) of each batch item of x_rows.out (read in place when not FP8).
Tensor apply_rows(const Linear& layer, const ops::RowWindow& x_rows, std::int64_t rows);

struct Norm {  // LayerNorm gain and bias (RMSNorm: bias undefined)
  Tensor weight, bias;
};

struct RefinerBlockWeights {
  Norm norm1, norm2;
  Linear to_q, to_k, to_v, to_out;
  Linear ff_in, ff_out;  // ff.net.0.proj (then SiLU), ff.net.2
  Linear ada;            // norm_out.linear: gate_msa, gate_mlp
};

struct BlockWeights {
  Linear norm1, norm1_context;  // AdaLayerNormZero: 6 x inner_dim each
  Linear to_q, to_k, to_v, add_q, add_k, add_v, to_out, to_add_out;
  Tensor norm_q, norm_k, norm_added_q, norm_added_k;  // per-head RMSNorm gains [head_dim]
  Linear ff_in, ff_out, ff_context_in, ff_context_out;
};

struct Weights {
  Linear x_embed;  // Conv3d weight [D, C, pt, ph, pw] and bias
  Norm image_norm_in, image_norm_out;
  Linear image_1, image_2;
  Linear refiner_time_1, refiner_time_2, refiner_text_1, refiner_text_2, refiner_proj_in;
  std::vector<RefinerBlockWeights> refiner;
  Norm byt5_norm;
  Linear byt5_1, byt5_2, byt5_3;
  Linear time_1, time_2;
  Tensor cond_type_embed;  // [3, D]: Qwen text, ByT5 text, image
  std::vector<BlockWeights> blocks;
  Linear norm_out;  // AdaLayerNormContinuous: scale then shift
  // proj_out with its rows reordered from diffusers' (C, pt, ph, pw) to (pt, ph, pw, C), the feature order
  // ops::unpatchify_3d reads (the same for a 1x1x1 patch).
  Linear proj_out;
};

// Checks the store against the manifest (every missing and unexpected tensor at once), then takes each
// tensor, shape checked, converted to `dtype` on `device`. Throws UserError. With a tensor-parallel group
// of more than one rank, the dual-stream blocks' split tensors are taken as this rank's slices only
// (dattn/models/hunyuanvideo15/tensor_parallel.h).
Weights load_weights(WeightStore& store, const HunyuanVideo15TransformerConfig& config, DType dtype, Device device,
                     const parallel::Communicator* tensor_parallel = nullptr);

// --quantization fp8: every dual-stream block's attention projections (to_q/k/v, add_q/k/v, to_out,
// to_add_out) and both streams' FFN linears, quantized per output channel on their device, one layer at
// a time. The embedders, the token refiner, the modulations (norm1, norm1_context, norm_out) and
// proj_out stay in the run dtype (docs/fp8.md).
void quantize_fp8(Weights& weights);

}  // namespace dattn::hv15
