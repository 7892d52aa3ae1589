#pragma once
// SPARSE_BLOCK's block mask estimated on the GPU (block_mask_cuda.cu): the CPU's estimate_block_mask
// (block_mask.cc) block for block and in the same order, left in device memory for the attention
// kernels. Plain C++ (no CUDA headers); streams travel as void* (a cudaStream_t).
#include <cstdint>

#include "attention/backends/sparse_block/block_mask.h"
#include "attention/kernels/device_key_blocks.h"
#include "dattn/attention/problem.h"

namespace dattn::sparse {

// The most key blocks per row: one CTA sorts a whole row in shared memory (8 bytes per block).
inline constexpr std::int64_t kMaxCudaKeyBlocks = 16384;

class DeviceBlockMask;

// Which kernels select the blocks after the pool. Both give the same mask; callers take kFastest, tests
// also pin kGeneral so that it is checked against the CPU on rows the warp path would take.
enum class MaskKernels {
  kFastest,  // a warp per row (score + select in one kernel) where it fits, else kGeneral
  kGeneral,  // a score kernel, then a select kernel with a CTA per row
};

// Steps 1-4 of SPARSE_BLOCK on the device, asynchronous on problem.stream (no host synchronisation).
// q, k and key_mask are device memory, bf16 or fp16 (else UserError naming the dtype); block_size 64 or
// 128; any head dim; GQA; key padding by key_lengths (host) or key_mask (device), as key_valid() reads
// them. with_mask_order also keeps each row's kept blocks in mask order (for download_block_mask).
DeviceBlockMask estimate_block_mask_cuda(const AttentionProblem& problem, const BlockMaskOptions& options,
                                         bool with_mask_order, MaskKernels kernels = MaskKernels::kFastest);

// Owns the mask's device memory (one stream-ordered allocation, freed in order on the estimating
// stream, so a kernel queued there before destruction may still read it). Movable, not copyable.
class DeviceBlockMask {
 public:
  DeviceBlockMask() = default;
  ~DeviceBlockMask();
  DeviceBlockMask(DeviceBlockMask&& other) noexcept;
  DeviceBlockMask& operator=(DeviceBlockMask&& other) noexcept;
  DeviceBlockMask(const DeviceBlockMask&) = delete;
  DeviceBlockMask& operator=(const DeviceBlockMask&) = delete;

  // Each row's kept blocks ascending, as the attention kernels read them.
  DeviceKeyBlocks view() const;
  // [rows][key_blocks]: each row's first counts[r] entries in mask order; nullptr unless requested.
  const int* mask_order() const { return order_; }
  void* stream() const { return stream_; }

  std::int64_t batch() const { return batch_; }
  std::int64_t heads() const { return heads_; }
  std::int64_t query_blocks() const { return query_blocks_; }
  std::int64_t key_blocks() const { return key_blocks_; }
  std::int64_t block_size() const { return block_size_; }
  std::int64_t rows() const { return batch_ * heads_ * query_blocks_; }

 private:
  friend DeviceBlockMask estimate_block_mask_cuda(const AttentionProblem&, const BlockMaskOptions&, bool,
                                                  MaskKernels);
  void release() noexcept;

  void* base_ = nullptr;
  void* stream_ = nullptr;
  int* blocks_ = nullptr;
  int* counts_ = nullptr;
  int* order_ = nullptr;
  std::int64_t batch_ = 0, heads_ = 0, query_blocks_ = 0, key_blocks_ = 0, block_size_ = 0;
};

// Waits for the estimation and copies the mask to the host, each row in mask order: the layout of the
// CPU's BlockMask. Needs a mask estimated with with_mask_order (std::logic_error otherwise).
BlockMask download_block_mask(const DeviceBlockMask& mask);

}  // namespace dattn::sparse
