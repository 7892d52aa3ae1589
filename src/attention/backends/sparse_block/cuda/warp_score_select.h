#pragma once
// SPARSE_BLOCK mask steps 2-4 in one kernel for short rows (at most kWarpSelectKeyBlocks key blocks,
// density only): a warp per query block scores its key blocks against means held in shared memory and
// sorts them in registers, instead of a score kernel, a pass through global memory and a CTA per row.
// Same scores, keys and counts as the general path (block_mask_cuda.cu), so the same mask.
// Plain C++ (no CUDA headers); the stream travels as void* (a cudaStream_t).
#include <cstddef>

namespace dattn::sparse {

inline constexpr int kWarpSelectKeyBlocks = 128;

struct WarpScoreSelectArgs {
  const float* q_mean;     // [B][query_blocks][Hq * D]
  const float* k_mean;     // [B][key_blocks][Hkv * D]
  const int* valid_count;  // [B][key_blocks]
  int* blocks;             // [rows][key_blocks]: the ascending kept blocks (first counts[r])
  int* counts;             // [rows]
  int* order;              // [rows][key_blocks]: kept blocks in mask order, or nullptr
  int batch, heads_q, heads_kv, head_dim, query_blocks, key_blocks;
  float scale;
  double density;
  bool keep_diagonal;
};

// Whether the warp path takes rows of `key_blocks` blocks with this head dim and options (its shared
// memory holds one head's key-block means; its grid has ceil(query_blocks / 8) rows of CTAs, at most
// 65535). The caller uses the general path otherwise.
bool warp_score_select_fits(int query_blocks, int key_blocks, int head_dim, bool has_cdf);

// Queues the kernel on `stream`; requires warp_score_select_fits.
void launch_warp_score_select(const WarpScoreSelectArgs& args, void* stream);

}  // namespace dattn::sparse
