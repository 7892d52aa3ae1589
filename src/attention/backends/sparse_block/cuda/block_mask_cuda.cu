// SPARSE_BLOCK's block mask on CUDA, the CPU's estimate_block_mask (block_mask.cc) bit for bit. This
// file is the host side (limits, buffers, launches); the kernels live in mask_pool_kernel.cuh,
// mask_score_select_kernels.cuh and warp_score_select.cu:
//  pool   - a CTA per block and 256 (or 32) columns, a warp per 16-row group of the block, each lane
//           summing 8 (or 1) columns of its group's rows in row order, then the group sums in order
//           (the CPU's pool_rows): Q and K are read once, coalesced. Means of each query block and of
//           each key block's valid keys, and each key block's valid key count.
//  score  - 32x32 tiles of (query block, key block) dots per (b, h), each a sequential sum over the
//           channels, written into the mask's own blocks buffer (same size; select reads it first).
//  select - one CTA per row: bitonic sort of (diagonal, score descending, index) keys in shared
//           memory, the count (density and/or cdf), then the mask order and the ascending list.
//  Rows of at most 128 key blocks with density only take score and select in one kernel instead, a
//  warp per row (warp_score_select.cu), with the same arithmetic and keys (mask_sort_key.cuh).
// nvcc contracts a*b+c into an FMA by default and the CPU build (x86-64, no -mfma) does not: every
// operation the CPU does separately is an explicit round-to-nearest intrinsic here.
#include "attention/backends/sparse_block/cuda/block_mask_cuda.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "attention/backends/sparse_block/cuda/mask_pool_kernel.cuh"
#include "attention/backends/sparse_block/cuda/mask_score_select_kernels.cuh"
#include "attention/backends/sparse_block/cuda/warp_score_select.h"
#include "core/cuda/check.cuh"
#include "core/cuda/stream.cuh"
#include "dattn/core/error.h"

namespace dattn::sparse {
namespace {

std::size_t align256(std::size_t n) { return (n + 255) / 256 * 256; }

const LogTable& log_table() {
  static const LogTable table = [] {
    LogTable t{};
    t.v[0] = -INFINITY;  // never read: blocks without valid keys are excluded
    for (int n = 1; n <= 128; ++n) {
      volatile float x = static_cast<float>(n);  // a run-time logf like the CPU's, never constant-folded
      t.v[n] = std::log(static_cast<float>(x));
    }
    return t;
  }();
  return table;
}

void check_limit(bool ok, const std::string& what) {
  if (!ok) throw UserError("SPARSE_BLOCK (cuda) block mask: " + what);
}

}  // namespace

DeviceBlockMask::~DeviceBlockMask() { release(); }

void DeviceBlockMask::release() noexcept {
  if (base_) cudaFreeAsync(base_, static_cast<cudaStream_t>(stream_));
  base_ = nullptr;
}

DeviceBlockMask::DeviceBlockMask(DeviceBlockMask&& o) noexcept { *this = std::move(o); }

DeviceBlockMask& DeviceBlockMask::operator=(DeviceBlockMask&& o) noexcept {
  if (this != &o) {
    release();
    base_ = std::exchange(o.base_, nullptr);
    stream_ = o.stream_;
    blocks_ = std::exchange(o.blocks_, nullptr);
    counts_ = std::exchange(o.counts_, nullptr);
    order_ = std::exchange(o.order_, nullptr);
    batch_ = o.batch_;
    heads_ = o.heads_;
    query_blocks_ = o.query_blocks_;
    key_blocks_ = o.key_blocks_;
    block_size_ = o.block_size_;
  }
  return *this;
}

DeviceKeyBlocks DeviceBlockMask::view() const {
  DeviceKeyBlocks v;
  v.blocks = blocks_;
  v.counts = counts_;
  v.block_size = static_cast<int>(block_size_);
  v.query_blocks = static_cast<int>(query_blocks_);
  v.key_blocks = static_cast<int>(key_blocks_);
  return v;
}

namespace {

// The select kernel's static shared memory on a device (fixed per device: one lookup per index).
std::size_t select_static_smem(int device) {
  constexpr int kMaxDevices = 64;
  static std::array<std::atomic<std::size_t>, kMaxDevices> bytes{};  // 0: not looked up yet
  if (device < 0 || device >= kMaxDevices)
    throw std::runtime_error("SPARSE_BLOCK (cuda): device index " + std::to_string(device) + " out of range");
  std::size_t n = bytes[static_cast<std::size_t>(device)].load(std::memory_order_relaxed);
  if (n == 0) {
    cudaFuncAttributes attr{};
    DATTN_CUDA_CHECK(cudaFuncGetAttributes(&attr, select_kernel));
    n = attr.sharedSizeBytes + 1;  // stored + 1 so that 0 bytes is distinguishable from "not yet"
    bytes[static_cast<std::size_t>(device)].store(n, std::memory_order_relaxed);
  }
  return n - 1;
}

}  // namespace

DeviceBlockMask estimate_block_mask_cuda(const AttentionProblem& p, const BlockMaskOptions& options,
                                         bool with_mask_order, MaskKernels kernels) {
  const AttentionShape& sh = p.shape;
  if (sh.dtype != DType::BF16 && sh.dtype != DType::F16)
    throw UserError("SPARSE_BLOCK (cuda) block mask: dtype " + std::string(dtype_name(sh.dtype)) +
                    " is not bf16 or fp16");
  check_mask_options(options);
  if (options.block_size != 64 && options.block_size != 128)
    throw UserError("SPARSE_BLOCK (cuda) block mask: block_size " + std::to_string(options.block_size) +
                    " is not 64 or 128");
  sh.validate();
  check_limit(p.key_lengths.empty() || std::int64_t(p.key_lengths.size()) == sh.batch,
              "key_lengths has " + std::to_string(p.key_lengths.size()) + " entries, expected " +
                  std::to_string(sh.batch));
  const std::int64_t B = sh.batch, bs = options.block_size, nqb = (sh.seq_q + bs - 1) / bs,
                     nkb = (sh.seq_k + bs - 1) / bs, rows = B * sh.heads_q * nqb;
  check_limit(nkb <= kMaxCudaKeyBlocks, std::to_string(nkb) + " key blocks (seq_k " + std::to_string(sh.seq_k) +
                                            ") exceed the limit of " + std::to_string(kMaxCudaKeyBlocks));
  check_limit(B <= 65535, "batch " + std::to_string(B) + " exceeds 65535");
  check_limit(rows <= INT_MAX && B * sh.heads_q <= INT_MAX && sh.seq_q <= INT_MAX && sh.seq_k <= INT_MAX &&
                  sh.heads_q * sh.head_dim <= INT_MAX && (nqb + kTile - 1) / kTile <= 65535,
              sh.describe() + " is too large");
  const auto stream = dattn::cuda::stream_or_current(p.stream);

  int padded = 1;
  while (padded < nkb) padded *= 2;
  const int threads = std::clamp(padded / 2, 32, kMaxSelectThreads);
  const std::size_t dyn_smem = std::size_t(padded) * sizeof(u64);
  {  // one CTA sorts a row in shared memory: the device must offer that much
    int device = 0, optin = 0;
    DATTN_CUDA_CHECK(cudaGetDevice(&device));
    const std::size_t static_smem = select_static_smem(device);
    DATTN_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    check_limit(dyn_smem + static_smem <= std::size_t(optin),
                std::to_string(nkb) + " key blocks need more shared memory than this device has");
    if (dyn_smem + static_smem > 48 * 1024)
      DATTN_CUDA_CHECK(cudaFuncSetAttribute(select_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(dyn_smem)));
  }

  DeviceBlockMask mask;
  mask.stream_ = dattn::cuda::stream_or_current(p.stream);
  mask.batch_ = B;
  mask.heads_ = sh.heads_q;
  mask.query_blocks_ = nqb;
  mask.key_blocks_ = nkb;
  mask.block_size_ = bs;
  const std::size_t list_bytes = align256(std::size_t(rows * nkb) * sizeof(int));
  const std::size_t count_bytes = align256(std::size_t(rows) * sizeof(int));
  // Scratch (pooled means, valid key counts, key lengths) shares the mask's allocation and lifetime:
  // a free between select and the attention kernel would stand between two launches that may overlap.
  const std::int64_t cols_q = sh.heads_q * sh.head_dim, cols_k = sh.heads_kv * sh.head_dim;
  const std::size_t sizes[] = {align256(std::size_t(B * nqb * cols_q) * sizeof(float)),
                               align256(std::size_t(B * nkb * cols_k) * sizeof(float)),
                               align256(std::size_t(B * nkb) * sizeof(int)), align256(std::size_t(B) * sizeof(int))};
  const std::size_t mask_bytes = count_bytes + list_bytes * (with_mask_order ? 2 : 1);
  DATTN_CUDA_CHECK(cudaMallocAsync(&mask.base_, mask_bytes + sizes[0] + sizes[1] + sizes[2] + sizes[3], stream));
  auto* base = static_cast<unsigned char*>(mask.base_);
  mask.counts_ = reinterpret_cast<int*>(base);
  mask.blocks_ = reinterpret_cast<int*>(base + count_bytes);
  if (with_mask_order) mask.order_ = reinterpret_cast<int*>(base + count_bytes + list_bytes);
  auto* s = base + mask_bytes;
  PoolArgs pool{};
  pool.q = p.q;
  pool.k = p.k;
  pool.q_mean = reinterpret_cast<float*>(s);
  pool.k_mean = reinterpret_cast<float*>(s + sizes[0]);
  pool.valid_count = reinterpret_cast<int*>(s + sizes[0] + sizes[1]);
  pool.key_mask = p.key_mask;
  if (!p.key_lengths.empty()) {
    std::vector<int> lengths(B);
    for (std::int64_t b = 0; b < B; ++b) lengths[b] = int(std::clamp<std::int64_t>(p.key_lengths[b], 0, sh.seq_k));
    if (B <= kParamLengths) {
      pool.lengths_from = 1;
      std::copy(lengths.begin(), lengths.end(), pool.length_param);
    } else {  // a copy from pageable memory: staged before the call returns, but it may wait for the stream
      int* dst = reinterpret_cast<int*>(s + sizes[0] + sizes[1] + sizes[2]);
      DATTN_CUDA_CHECK(cudaMemcpyAsync(dst, lengths.data(), B * sizeof(int), cudaMemcpyHostToDevice, stream));
      pool.lengths_from = 2;
      pool.lengths = dst;
    }
  }
  pool.seq_q = int(sh.seq_q);
  pool.seq_k = int(sh.seq_k);
  pool.cols_q = int(cols_q);
  pool.cols_k = int(cols_k);
  pool.block_size = int(bs);
  pool.query_blocks = int(nqb);
  pool.key_blocks = int(nkb);
  const bool vec8 = cols_q % 8 == 0 && cols_k % 8 == 0 && reinterpret_cast<std::uintptr_t>(p.q) % 16 == 0 &&
                    reinterpret_cast<std::uintptr_t>(p.k) % 16 == 0;
  if (sh.dtype == DType::BF16)
    launch_pool<true>(pool, int(B), vec8, stream);
  else
    launch_pool<false>(pool, int(B), vec8, stream);

  if (kernels == MaskKernels::kFastest &&
      warp_score_select_fits(int(nqb), int(nkb), int(sh.head_dim), options.cdf_threshold.has_value())) {
    const WarpScoreSelectArgs ws{pool.q_mean, pool.k_mean, pool.valid_count, mask.blocks_, mask.counts_, mask.order_,
                                 int(B), int(sh.heads_q), int(sh.heads_kv), int(sh.head_dim), int(nqb), int(nkb),
                                 p.softmax_scale(), options.density.value_or(kDefaultDensity), options.keep_diagonal};
    launch_warp_score_select(ws, stream);
    return mask;
  }
  ScoreArgs score{pool.q_mean, pool.k_mean, reinterpret_cast<float*>(mask.blocks_), int(sh.heads_q),
                  int(sh.heads_kv), int(sh.head_dim), int(nqb), int(nkb), p.softmax_scale()};
  const dim3 score_grid(unsigned(B * sh.heads_q), unsigned((nqb + kTile - 1) / kTile),
                        unsigned((nkb + kTile - 1) / kTile));
  score_kernel<<<score_grid, kScoreThreads, 0, stream>>>(score);
  DATTN_CUDA_CHECK(cudaGetLastError());

  SelectArgs sel{};
  sel.blocks = mask.blocks_;
  sel.counts = mask.counts_;
  sel.order = mask.order_;
  sel.valid_count = pool.valid_count;
  sel.heads_q = int(sh.heads_q);
  sel.query_blocks = int(nqb);
  sel.key_blocks = int(nkb);
  sel.padded = padded;
  sel.density = options.density.value_or(kDefaultDensity);
  sel.has_density = options.density.has_value();
  sel.has_cdf = options.cdf_threshold.has_value();
  sel.cdf_threshold = static_cast<float>(options.cdf_threshold.value_or(1.0));
  sel.keep_diagonal = options.keep_diagonal;
  sel.log_keys = log_table();
  select_kernel<<<unsigned(rows), threads, dyn_smem, stream>>>(sel);
  DATTN_CUDA_CHECK(cudaGetLastError());
  return mask;
}

BlockMask download_block_mask(const DeviceBlockMask& mask) {
  BlockMask out;
  out.block_size = mask.block_size();
  out.batch = mask.batch();
  out.heads = mask.heads();
  out.query_blocks = mask.query_blocks();
  out.key_blocks = mask.key_blocks();
  const std::int64_t rows = mask.rows(), nkb = mask.key_blocks();
  out.kept.resize(rows);
  if (rows == 0) return out;
  if (!mask.mask_order())
    throw std::logic_error("download_block_mask: the mask was estimated without with_mask_order");
  const auto stream = static_cast<cudaStream_t>(mask.stream());
  std::vector<int> counts(rows), order(std::size_t(rows * nkb));
  DATTN_CUDA_CHECK(cudaMemcpyAsync(counts.data(), mask.view().counts, counts.size() * sizeof(int),
                                   cudaMemcpyDeviceToHost, stream));
  DATTN_CUDA_CHECK(cudaMemcpyAsync(order.data(), mask.mask_order(), order.size() * sizeof(int),
                                   cudaMemcpyDeviceToHost, stream));
  DATTN_CUDA_CHECK(cudaStreamSynchronize(stream));
  for (std::int64_t r = 0; r < rows; ++r)
    out.kept[r].assign(order.begin() + r * nkb, order.begin() + r * nkb + counts[r]);
  return out;
}

}  // namespace dattn::sparse
