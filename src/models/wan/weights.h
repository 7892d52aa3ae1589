#pragma once
// The tensors of a WanTransformer3DModel grouped by module, loaded through the manifest.
#include <map>
#include <string>
#include <vector>

#include "dattn/core/tensor.h"
#include "dattn/io/weight_store.h"
#include "dattn/ops/linear_fp8.h"
#include "dattn/models/wan/config.h"
#include "dattn/parallel/communicator.h"

namespace dattn::wan {

struct Linear {
  Tensor weight, bias;
  ops::Fp8Matrix fp8;  // when defined, the layer runs in FP8 and `weight` is released
};

// linear / linear_gelu_tanh through the layer's FP8 form when it has one.
Tensor apply(const Linear& layer, const Tensor& x);
// The same for an input several linears read (quantized once when they are FP8).
Tensor apply(const Linear& layer, const ops::LinearInput& x);
Tensor apply_gelu_tanh(const Linear& layer, const Tensor& x);
// apply(out, apply_gelu_tanh(in, x)); two FP8 layers pass the hidden activation on quantized.
Tensor apply_feed_forward(const Linear& in, const Linear& out, const Tensor& x);

struct AttentionWeights {
  Linear to_q, to_k, to_v, to_out;
  Tensor norm_q, norm_k;  // RMSNorm gains over the whole inner dim
};

struct BlockWeights {
  AttentionWeights attn1, attn2;
  Tensor norm2_weight, norm2_bias;  // undefined without cross_attn_norm
  Linear ffn_in, ffn_out;           // ffn.net.0.proj, ffn.net.2
  Tensor scale_shift_table;         // [1, 6, D] float32
};

struct Weights {
  Tensor patch_weight, patch_bias;
  Linear time_1, time_2, time_proj;  // time_embedder.linear_1/2 (float32), time_proj
  Linear text_1, text_2;             // text_embedder.linear_1/2
  std::vector<BlockWeights> blocks;
  Tensor scale_shift_table;  // [1, 2, D] float32
  Linear proj_out;
};

// Checks the store against the manifest first and reports every missing and unexpected tensor at once
// (UserError naming the directory and the tensors); then takes each tensor, shape checked, converted to
// `dtype` (float32 for the parameters diffusers keeps in float32) on `device`. With a tensor-parallel
// group of more than one rank, the blocks' split tensors are taken as this rank's slices only
// (tensor_parallel.h): the norm_q/norm_k gains, to_q/k/v and ffn_in hold its rows, to_out and ffn_out
// its weight columns (and their whole biases).
Weights load_weights(WeightStore& store, const WanTransformerConfig& config, DType dtype, Device device,
                     const parallel::Communicator* tensor_parallel = nullptr);

// --quantization fp8: every block's attention projections (attn1, attn2: to_q, to_k, to_v, to_out) and
// FFN linears quantized per output channel on their device, one layer at a time (the run-dtype weight
// of each is released once quantized). The patch, time and text embeddings, the modulation
// (time_proj), the norms and proj_out stay in the run dtype: they are a small share of the FLOPs and
// feed every token's conditioning, where an error is not averaged away (docs/fp8.md).
void quantize_fp8(Weights& weights);

}  // namespace dattn::wan
