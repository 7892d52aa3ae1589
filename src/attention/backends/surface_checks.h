#pragma once
// The checks every support predicate starts with, so that all backends word their refusals alike.
#include <algorithm>
#include <optional>
#include <string>

#include "dattn/attention/backend.h"

namespace dattn {

// "dtype fp64 not in {fp32, bf16, fp16}" when `t` is outside the device's surface.
inline std::optional<Support> refuse_dtype(const SupportSurface& surface, DType t) {
  if (std::find(surface.dtypes.begin(), surface.dtypes.end(), t) != surface.dtypes.end()) return std::nullopt;
  std::string set;
  for (DType d : surface.dtypes) set += (set.empty() ? "" : ", ") + std::string(dtype_name(d));
  return Support::no("dtype " + std::string(dtype_name(t)) + " not in {" + set + "}");
}

inline std::optional<Support> refuse_general_mask(const AttentionShape& shape) {
  if (shape.mask != MaskKind::General) return std::nullopt;
  return Support::no("general masks are supported only by TORCH_SDPA");
}

// For backends without a causal path (SAGE_ATTN, SPARSE_BLOCK).
inline std::optional<Support> refuse_causal(const AttentionShape& shape) {
  if (shape.mask != MaskKind::Causal) return std::nullopt;
  return Support::no("causal masks are supported only by FLASH_ATTN and TORCH_SDPA");
}

}  // namespace dattn
