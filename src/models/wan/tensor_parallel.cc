// The tensor-parallel split of the Wan checkpoint (see dattn/models/wan/tensor_parallel.h).
#include "dattn/models/wan/tensor_parallel.h"

#include "models/tensor_parallel.h"

namespace dattn {

std::optional<TensorSlice> wan_tensor_parallel_slice(const std::string& name, const WanTransformerConfig& config,
                                                     int rank, int ranks) {
  if (!name.starts_with("blocks.")) return std::nullopt;
  const auto has = [&](const char* part) { return name.find(part) != std::string::npos; };
  const std::int64_t d = config.inner_dim(), f = config.ffn_dim;
  // Column-parallel: the output rows of the weight, the bias and the q/k norm gains with them.
  for (const char* p : {".to_q.", ".to_k.", ".to_v.", ".norm_q.", ".norm_k."})
    if (has(p)) return models::rank_slice(rank, ranks, d, 0);
  if (has(".ffn.net.0.proj.")) return models::rank_slice(rank, ranks, f, 0);
  // Row-parallel: the input columns of the weight; the bias is whole (added after the sum).
  if (has(".to_out.0.weight")) return models::rank_slice(rank, ranks, d, 1);
  if (has(".ffn.net.2.weight")) return models::rank_slice(rank, ranks, f, 1);
  return std::nullopt;
}

}  // namespace dattn
