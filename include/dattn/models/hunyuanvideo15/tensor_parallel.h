#pragma once
// Which part of each HunyuanVideo15Transformer3DModel tensor a tensor-parallel rank holds (Megatron's
// split of the dual-stream blocks): both streams' q, k, v (to_q/k/v, add_q/k/v_proj) and FFN first linears
// are column-parallel (rank r of T holds heads [r H/T, (r + 1) H/T) and FFN columns [r F/T, (r + 1) F/T));
// the output projections (to_out.0, to_add_out) and FFN second linears are row-parallel (the weight's
// matching input columns, the whole bias). The per-head q/k norm gains, the token refiner, the embedders,
// the modulations and the output head are replicated. The memory estimate reads this too.
#include <optional>
#include <string>

#include "dattn/io/weight_store.h"
#include "dattn/models/hunyuanvideo15/config.h"

namespace dattn {

// The slice of checkpoint tensor `name` rank `rank` of `ranks` holds, nullopt for the whole tensor.
// UserError when a split dimension does not divide by `ranks`.
std::optional<TensorSlice> hunyuanvideo15_tensor_parallel_slice(const std::string& name,
                                                                const HunyuanVideo15TransformerConfig& config,
                                                                int rank, int ranks);

}  // namespace dattn
