#include "attention/backends/sparse_block/cuda_entry.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "dattn/core/device_memory.h"
#include "dattn/core/error.h"
#ifdef DATTN_WITH_CUDA
#include "attention/backends/sparse_block/cuda/block_mask_cuda.h"
#include "attention/backends/sparse_block/cuda/sparse_cuda.h"
#endif

namespace dattn::sparse {

void sparse_attention_cuda_entry(const AttentionProblem& problem, const BlockMask& mask, SparseKernel kernel) {
#ifdef DATTN_WITH_CUDA
  const std::int64_t rows = mask.batch * mask.heads * mask.query_blocks, stride = mask.key_blocks;
  if (static_cast<std::int64_t>(mask.kept.size()) != rows)
    throw UserError("SPARSE_BLOCK: the mask has " + std::to_string(mask.kept.size()) + " rows, expected " +
                    std::to_string(rows));
  // Flattened as the kernels read it: counts, then each row's blocks ascending at a fixed stride.
  std::vector<int> host(static_cast<std::size_t>(rows * (stride + 1)), 0);
  for (std::int64_t r = 0; r < rows; ++r) {
    std::vector<std::int32_t> blocks = mask.kept[r];
    std::sort(blocks.begin(), blocks.end());
    for (const std::int32_t b : blocks)
      if (b < 0 || b >= stride)
        throw UserError("SPARSE_BLOCK: kept key block " + std::to_string(b) + " is outside [0, " +
                        std::to_string(stride) + ")");
    // Blocks starting at or past the batch item's key length hold no valid key: not listed.
    const std::int64_t batch_item = r / (mask.heads * mask.query_blocks);
    const std::int64_t valid = problem.key_lengths.empty()
                                   ? problem.shape.seq_k
                                   : std::clamp<std::int64_t>(problem.key_lengths[batch_item], 0, problem.shape.seq_k);
    std::erase_if(blocks, [&](std::int32_t b) { return b * mask.block_size >= valid; });
    host[r] = static_cast<int>(blocks.size());
    std::copy(blocks.begin(), blocks.end(), host.begin() + rows + r * stride);
  }
  DeviceBuffer device(std::max<std::size_t>(1, host.size() * sizeof(int)));
  device.upload(host.data(), host.size() * sizeof(int));
  DeviceKeyBlocks view;
  view.counts = static_cast<const int*>(device.get());
  view.blocks = view.counts + rows;
  view.block_size = static_cast<int>(mask.block_size);
  view.query_blocks = static_cast<int>(mask.query_blocks);
  view.key_blocks = static_cast<int>(mask.key_blocks);
  sparse_attention_cuda(problem, view, kernel);
  check_device("SPARSE_BLOCK (cuda)");  // the buffer must outlive the kernel
#else
  (void)problem;
  (void)mask;
  (void)kernel;
  throw UserError("SPARSE_BLOCK: dattn was built without CUDA");
#endif
}

BlockMask estimate_block_mask_cuda_entry(const AttentionProblem& problem, const BlockMaskOptions& options) {
#ifdef DATTN_WITH_CUDA
  return download_block_mask(estimate_block_mask_cuda(problem, options, /*with_mask_order=*/true));
#else
  (void)problem;
  (void)options;
  throw UserError("SPARSE_BLOCK: dattn was built without CUDA");
#endif
}

void estimate_block_mask_only_cuda_entry(const AttentionProblem& problem, const BlockMaskOptions& options) {
#ifdef DATTN_WITH_CUDA
  (void)estimate_block_mask_cuda(problem, options, /*with_mask_order=*/false);  // freed in stream order
#else
  (void)problem;
  (void)options;
  throw UserError("SPARSE_BLOCK: dattn was built without CUDA");
#endif
}

HeldDeviceMask::HeldDeviceMask(const AttentionProblem& problem, const BlockMaskOptions& options) {
#ifdef DATTN_WITH_CUDA
  mask_ = std::make_shared<DeviceBlockMask>(estimate_block_mask_cuda(problem, options, /*with_mask_order=*/false));
#else
  (void)problem;
  (void)options;
  throw UserError("SPARSE_BLOCK: dattn was built without CUDA");
#endif
}

void HeldDeviceMask::attend(const AttentionProblem& problem) const {
#ifdef DATTN_WITH_CUDA
  sparse_attention_cuda(problem, static_cast<const DeviceBlockMask*>(mask_.get())->view());
#else
  (void)problem;
#endif
}

}  // namespace dattn::sparse
