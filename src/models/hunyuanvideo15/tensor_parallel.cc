// The tensor-parallel split of the HunyuanVideo-1.5 checkpoint (see dattn/models/hunyuanvideo15/tensor_parallel.h).
#include "dattn/models/hunyuanvideo15/tensor_parallel.h"

#include "models/tensor_parallel.h"

namespace dattn {

std::optional<TensorSlice> hunyuanvideo15_tensor_parallel_slice(const std::string& name,
                                                                const HunyuanVideo15TransformerConfig& config,
                                                                int rank, int ranks) {
  if (!name.starts_with("transformer_blocks.")) return std::nullopt;  // the refiner's blocks stay whole
  const auto has = [&](const char* part) { return name.find(part) != std::string::npos; };
  const std::int64_t d = config.inner_dim(), f = config.mlp_dim();
  // Column-parallel: the weight's output rows and the bias with them (the norm gains are per head: whole).
  for (const char* p : {".attn.to_q.", ".attn.to_k.", ".attn.to_v.", ".attn.add_q_proj.", ".attn.add_k_proj.",
                        ".attn.add_v_proj."})
    if (has(p)) return models::rank_slice(rank, ranks, d, 0);
  if (has(".ff.net.0.proj.") || has(".ff_context.net.0.proj.")) return models::rank_slice(rank, ranks, f, 0);
  // Row-parallel: the weight's input columns; the bias is whole (added after the sum).
  if (has(".attn.to_out.0.weight") || has(".attn.to_add_out.weight")) return models::rank_slice(rank, ranks, d, 1);
  if (has(".ff.net.2.weight") || has(".ff_context.net.2.weight")) return models::rank_slice(rank, ranks, f, 1);
  return std::nullopt;
}

}  // namespace dattn
