// SPARSE_BLOCK on CUDA: kernel choice and, for the Hopper kernel, the per-work-tile key-tile lists.
// The Hopper kernel's work tile is 128 query rows and its key tile 128 keys. With 128-row blocks the
// kept-block lists are its lists as they are. With 64-row blocks each consumer warpgroup's 64 rows are
// one query block: a work tile visits the union of its two blocks' kept 128-key tiles and hides, per
// warpgroup, the 64-key halves its own block did not keep (exact, but a tile costs as much as when both
// halves were kept: scattered 64-blocks cost up to 4x their share; see docs/backend-semantics.md).
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>
#include <string>

#include "attention/kernels/flash/flash_cuda.h"
#include "attention/kernels/flash/hopper/flash_hopper.h"
#include "attention/kernels/sm90/flash_hopper_config.cuh"
#include "attention/backends/sparse_block/cuda/block_mask_cuda.h"
#include "attention/backends/sparse_block/cuda/sparse_cuda.h"
#include "core/cuda/check.cuh"
#include "core/cuda/stream.cuh"
#include "dattn/core/error.h"

namespace dattn::sparse {
namespace {

using flash::hopper::KeyTileEntry;
constexpr int kHopperRows = 128;  // rows per Hopper work tile, keys per Hopper key tile

// One thread per Hopper work tile (b, h, m): merges the ascending lists of query blocks 2m and 2m+1
// into ascending 128-key tiles; a half is visible to warpgroup w when block 2m+w kept it.
__global__ void merge_half_blocks(DeviceKeyBlocks kb, int work_rows, int m_blocks, int stride, int* entries,
                                  int* counts) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= work_rows) return;
  const int bh = r / m_blocks, m = r % m_blocks;
  const std::int64_t row0 = static_cast<std::int64_t>(bh) * kb.query_blocks + 2 * m;
  const int* list0 = kb.blocks + row0 * kb.key_blocks;
  const int* list1 = list0 + kb.key_blocks;
  const int n0 = kb.counts[row0], n1 = 2 * m + 1 < kb.query_blocks ? kb.counts[row0 + 1] : 0;
  int* out = entries + static_cast<std::int64_t>(r) * stride;
  int i0 = 0, i1 = 0, n = 0;
  while (i0 < n0 || i1 < n1) {
    const int t = min(i0 < n0 ? list0[i0] / 2 : INT_MAX, i1 < n1 ? list1[i1] / 2 : INT_MAX);
    int visible = 0;  // bit 2w + half
    for (; i0 < n0 && list0[i0] / 2 == t; ++i0) visible |= 1 << (list0[i0] & 1);
    for (; i1 < n1 && list1[i1] / 2 == t; ++i1) visible |= 4 << (list1[i1] & 1);
    out[n++] = KeyTileEntry::make(t, ~visible & 0xF);
  }
  counts[r] = n;
}

void run_hopper(const AttentionProblem& problem, const DeviceKeyBlocks& kb) {
  const AttentionShape& sh = problem.shape;
  const auto stream = dattn::cuda::stream_or_current(problem.stream);
  const int m_blocks = static_cast<int>((sh.seq_q + kHopperRows - 1) / kHopperRows);
  if (kb.block_size == kHopperRows) {
    const flash::HopperTileLists lists{kb.blocks, kb.counts, kb.key_blocks, /*hidden_halves=*/false};
    flash::flash_attention_hopper(problem, &lists);
    return;
  }
  const std::int64_t work_rows = sh.batch * sh.heads_q * m_blocks;
  const int stride = static_cast<int>((sh.seq_k + kHopperRows - 1) / kHopperRows);
  if (work_rows * stride > INT_MAX) throw UserError("SPARSE_BLOCK (cuda): " + sh.describe() + " has too many tiles");
  int* buffer = nullptr;
  DATTN_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&buffer),
                                   sizeof(int) * static_cast<std::size_t>(work_rows * (stride + 1)), stream));
  int* counts = buffer + work_rows * stride;
  constexpr int kThreads = 128;
  merge_half_blocks<<<static_cast<unsigned>((work_rows + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
      kb, static_cast<int>(work_rows), m_blocks, stride, buffer, counts);
  DATTN_CUDA_CHECK(cudaGetLastError());
  const flash::HopperTileLists lists{buffer, counts, stride, /*hidden_halves=*/true};
  flash::flash_attention_hopper(problem, &lists);
  DATTN_CUDA_CHECK(cudaFreeAsync(buffer, stream));
}

}  // namespace

Support sparse_cuda_supports(const AttentionShape& shape, int cc) {
  return flash::flash_cuda_sparse_supports(shape, cc, kHopperRows);
}

void sparse_attention_cuda(const AttentionProblem& problem, const DeviceKeyBlocks& blocks, SparseKernel kernel) {
  if (blocks.block_size != 64 && blocks.block_size != 128)
    throw UserError("SPARSE_BLOCK (cuda): block_size " + std::to_string(blocks.block_size) + " is not 64 or 128");
  const std::int64_t bs = blocks.block_size, sq = problem.shape.seq_q, sk = problem.shape.seq_k;
  if (blocks.query_blocks != (sq + bs - 1) / bs || blocks.key_blocks != (sk + bs - 1) / bs)
    throw UserError("SPARSE_BLOCK (cuda): a mask of " + std::to_string(blocks.query_blocks) + " x " +
                    std::to_string(blocks.key_blocks) + " blocks of " + std::to_string(bs) + " does not fit " +
                    problem.shape.describe());
  if (problem.shape.batch == 0 || sq == 0 || problem.shape.heads_q == 0) return;
  // flash_hopper_handles: FLASH_ATTN's own choice for the same problem (shape, key lengths rather than
  // a key mask, positive scale, alignment).
  const bool use_hopper = kernel != SparseKernel::Portable && flash::flash_hopper_handles(problem, KernelChoice::Auto);
  if (kernel == SparseKernel::Hopper && !use_hopper)
    throw UserError("SPARSE_BLOCK (cuda): the Hopper kernel cannot run " + problem.shape.describe() +
                    " here (needs sm_90, bf16/fp16, D=64 or 128, key lengths not a key mask, positive scale, "
                    "16-byte aligned tensors)");
  if (use_hopper)
    run_hopper(problem, blocks);
  else
    flash::flash_attention_cuda_sparse(problem, blocks);
}

void sparse_block_cuda(const AttentionProblem& problem, const BlockMaskOptions& options) {
  const DeviceBlockMask mask = estimate_block_mask_cuda(problem, options, /*with_mask_order=*/false);
  sparse_attention_cuda(problem, mask.view());
}  // the mask's buffers are freed in stream order, after the kernel

}  // namespace dattn::sparse
