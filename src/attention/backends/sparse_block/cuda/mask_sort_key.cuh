#pragma once
// What SPARSE_BLOCK's two mask selection paths on CUDA must do alike (mask_score_select_kernels.cuh: a
// score kernel and a CTA per row; warp_score_select.cu: a warp per row): the score arithmetic, the sort
// key and the count. Both sort a row's keys ascending and keep the first `count`, which is the CPU's
// select_key_blocks order (block_mask.cc).
#include <cuda_runtime.h>

namespace dattn::sparse {

using u64 = unsigned long long;
inline constexpr u64 kExcluded = ~0ull;  // padding and key blocks without valid keys: sort last

// One channel of a block-pair score, as the CPU's dot: a separate multiply and add, each rounded (nvcc
// would otherwise contract them into an FMA). Channels are added in ascending order.
__device__ __forceinline__ float score_step(float acc, float q, float k) { return __fadd_rn(acc, __fmul_rn(q, k)); }

// The inclusive prefix sum of `v` over the lanes of a full warp.
__device__ __forceinline__ int warp_inclusive_sum(int v, int lane) {
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int y = __shfl_up_sync(0xffffffffu, v, o);
    if (lane >= o) v += y;
  }
  return v;
}

// Ascending key = (not diagonal, score descending, block index, NaN flag): the CPU's stable sort by
// sort_key(score) descending (NaN as +inf, so a NaN block is kept; -0 == +0) with the diagonal rotated
// to the front. The flag below the index never decides the order; it only lets key_score() give the
// NaN back.
__device__ __forceinline__ u64 sort_key(float s, int j, bool diagonal) {
  const bool nan = isnan(s);
  const float c = nan ? __int_as_float(0x7f800000) : (s == 0.0f ? 0.0f : s);
  const unsigned u = __float_as_uint(c);
  const unsigned ascending = (u & 0x80000000u) ? ~u : (u | 0x80000000u);  // unsigned order = float order
  return (u64(!diagonal) << 62) | (u64(~ascending) << 30) | (u64(j) << 1) | u64(nan);
}
__device__ __forceinline__ int key_index(u64 key) { return static_cast<int>((key >> 1) & ((1u << 29) - 1)); }
// The score of a key (-0 comes back as +0, which gives the same cdf logit: -0 + log(n) == +0 + log(n)).
__device__ __forceinline__ float key_score(u64 key) {
  if (key & 1) return __int_as_float(0x7fffffff);
  const unsigned ascending = ~static_cast<unsigned>(key >> 30);
  return __uint_as_float((ascending & 0x80000000u) ? (ascending & 0x7fffffffu) : ~ascending);
}

// density_block_count() in the same double operations.
__device__ inline int density_count(double density, int n) {
  if (n <= 0) return 0;
  const double raw = __dmul_rn(density, static_cast<double>(n));
  const double nearest = round(raw);
  const double count = fabs(__dsub_rn(raw, nearest)) < 1e-9 ? nearest : ceil(raw);
  return static_cast<int>(min(max(static_cast<long long>(count), 1ll), static_cast<long long>(n)));
}

}  // namespace dattn::sparse
