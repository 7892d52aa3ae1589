#pragma once
// Which part of each WanTransformer3DModel tensor a tensor-parallel rank holds (Megatron's split): q, k,
// v (self and cross attention), their norm gains and the FFN's first linear are column-parallel (rank r
// of T holds heads [r H/T, (r + 1) H/T) and FFN columns [r F/T, (r + 1) F/T)); the attention output
// projections and the FFN's second linear are row-parallel (the weight's matching input columns, the
// whole bias). Everything outside the blocks is replicated. The memory estimate reads this too.
#include <optional>
#include <string>

#include "dattn/io/weight_store.h"
#include "dattn/models/wan/config.h"

namespace dattn {

// The slice of checkpoint tensor `name` rank `rank` of `ranks` holds, nullopt for the whole tensor.
// UserError when a split dimension does not divide by `ranks`.
std::optional<TensorSlice> wan_tensor_parallel_slice(const std::string& name, const WanTransformerConfig& config,
                                                     int rank, int ranks);

}  // namespace dattn
