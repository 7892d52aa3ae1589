// FLASH_ATTN on CUDA: the support predicate, the kernel choice per (dtype, head dim) and the launch.
// One entry point (flash_attention_cuda) picks the kernel: the Hopper (wgmma/TMA) kernel for the
// problems it handles (hopper/), the portable sm_80 kernel of flash_fwd_kernel.cuh for all others.
// flash_attention_cuda_sparse runs SPARSE_BLOCK's kept key blocks on the portable kernel.
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention/kernels/flash/flash_cuda.h"
#include "attention/kernels/flash/flash_fwd_kernel.cuh"
#include "attention/kernels/flash/hopper/flash_hopper.h"
#include "attention/kernels/device_key_blocks.h"
#include "core/cuda/check.cuh"
#include "core/cuda/stream.cuh"
#include "dattn/core/error.h"

namespace dattn::flash {
namespace {

using cuda_impl::FlashConfig;
using cuda_impl::FlashParams;
using cuda_impl::FlashSparseParams;

// Tiles of the sm_80 kernel (measured on an H200, Sq=Sk=11440, H=24, B=1, bf16; fp16 the same).
// D=128: FlashAttention-2's layout, 4 warps x 32 query rows, 64-key tiles, Q read from shared memory
// (251-255 registers, no spills; 104.5 KB: two CTAs per SM on Hopper): 329 TFLOP/s. Where two of
// those do not fit an SM (A100: 164 KB, sm_86/89: 100 KB), 32-key tiles take 70 KB (275 TFLOP/s on
// the H200). D=64: 4 x 32 rows, 64-key tiles (252). D=32: 4 warps x 16 rows, Q in registers, three
// CTAs per SM (173). 8 warps x 16 rows measured slower at every head dim (twice the ldmatrix traffic
// per mma).
template <typename T, int D, int kWarps, int kMTiles, int kBlockN, bool kQInRegs, int kMinBlocks>
using Cfg = FlashConfig<T, D, kWarps, kMTiles, kBlockN, kQInRegs, kMinBlocks>;
template <typename T>
using D128 = Cfg<T, 128, 4, 2, 64, false, 2>;
template <typename T>
using D128Small = Cfg<T, 128, 4, 2, 32, false, 2>;
template <typename T>
using D64 = Cfg<T, 64, 4, 2, 64, false, 2>;
template <typename T>
using D32 = Cfg<T, 32, 4, 1, 64, true, 3>;
// SPARSE_BLOCK with 64-row blocks: a query tile must lie inside one block, so 4 warps x 16 rows. The key
// tile is the dense one's (density 1 then repeats FLASH_ATTN's online-softmax steps). Q in registers
// shares the second K/V buffer's shared memory; without spills (ptxas, sm_80/sm_90a) that allows three
// CTAs per SM at D=128 (168 registers, 68 KB) and four at D=64 (128, 36 KB). Not yet timed on a GPU.
// D=32 runs D32 (64 rows) for both block sizes.
template <typename T>
using D128Rows64 = Cfg<T, 128, 4, 1, 64, true, 3>;
template <typename T>
using D128Rows64Small = Cfg<T, 128, 4, 1, 32, true, 3>;
template <typename T>
using D64Rows64 = Cfg<T, 64, 4, 1, 64, true, 4>;

int device_attribute(cudaDeviceAttr attr) {
  int device = 0, value = 0;
  DATTN_CUDA_CHECK(cudaGetDevice(&device));
  DATTN_CUDA_CHECK(cudaDeviceGetAttribute(&value, attr, device));
  return value;
}

// Whether `blocks` CTAs of `smem_bytes` each fit one SM (the runtime reserves 1 KB per CTA).
bool fits_per_sm(int smem_bytes, int blocks) {
  return blocks * (smem_bytes + 1024) <= device_attribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor);
}

// kSparseBlock 0: dense (FlashParams); 64 or 128: SPARSE_BLOCK's block size (FlashSparseParams).
// kCausal: the causal instantiation (dense only).
template <class Cfg, int kSparseBlock = 0, bool kCausal = false>
void launch(const cuda_impl::KernelParams<kSparseBlock>& params, int batch, cudaStream_t stream) {
  const auto kernel = cuda_impl::flash_fwd_kernel<Cfg, kSparseBlock, kCausal>;
  const int optin = device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin);
  if (Cfg::kSmemBytes > optin)
    throw std::runtime_error("FLASH_ATTN (cuda): the kernel needs " + std::to_string(Cfg::kSmemBytes) +
                             " bytes of shared memory per block, the device allows " + std::to_string(optin));
  // Set on every launch: the attribute is per device, and the call is cheap next to the kernel.
  DATTN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::kSmemBytes));
  const dim3 grid((params.seq_q + Cfg::kBlockM - 1) / Cfg::kBlockM, params.heads_q, batch);
  kernel<<<grid, Cfg::kThreads, Cfg::kSmemBytes, stream>>>(params);
  DATTN_CUDA_CHECK(cudaGetLastError());
}

template <typename T, bool kCausal>
void run_sm80(const FlashParams& params, int head_dim, int batch, cudaStream_t stream) {
  switch (head_dim) {
    case 32: return launch<D32<T>, 0, kCausal>(params, batch, stream);
    case 64: return launch<D64<T>, 0, kCausal>(params, batch, stream);
    case 128:
      if (fits_per_sm(D128<T>::kSmemBytes, 2)) return launch<D128<T>, 0, kCausal>(params, batch, stream);
      return launch<D128Small<T>, 0, kCausal>(params, batch, stream);
    default: throw std::logic_error("FLASH_ATTN (cuda): head_dim " + std::to_string(head_dim) + " has no kernel");
  }
}

// The same tile widths as run_sm80 (density 1 then takes FLASH_ATTN's steps); the query tile fits the block.
template <typename T, int kBlock>
void run_sm80_sparse(const FlashSparseParams& params, int head_dim, int batch, cudaStream_t stream) {
  using Rows128 = std::conditional_t<kBlock == 128, D128<T>, D128Rows64<T>>;
  using Rows128Small = std::conditional_t<kBlock == 128, D128Small<T>, D128Rows64Small<T>>;
  switch (head_dim) {
    case 32: return launch<D32<T>, kBlock>(params, batch, stream);
    case 64: return launch<std::conditional_t<kBlock == 128, D64<T>, D64Rows64<T>>, kBlock>(params, batch, stream);
    case 128:
      if (fits_per_sm(D128<T>::kSmemBytes, 2)) return launch<Rows128, kBlock>(params, batch, stream);
      return launch<Rows128Small, kBlock>(params, batch, stream);
    default:
      throw std::logic_error("SPARSE_BLOCK (cuda): head_dim " + std::to_string(head_dim) + " has no kernel");
  }
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// The kernel parameters of a problem, except key lengths (KeyLengths below).
void fill_params(const AttentionProblem& problem, FlashParams& params, const char* who) {
  const AttentionShape& sh = problem.shape;
  if (!aligned16(problem.q) || !aligned16(problem.k) || !aligned16(problem.v) || !aligned16(problem.out))
    throw UserError(std::string(who) + ": q, k, v and out must be 16-byte aligned device pointers");
  params.q = problem.q;
  params.k = problem.k;
  params.v = problem.v;
  params.out = problem.out;
  params.key_mask = problem.key_mask;
  params.seq_q = static_cast<int>(sh.seq_q);
  params.seq_k = static_cast<int>(sh.seq_k);
  params.heads_q = static_cast<int>(sh.heads_q);
  params.heads_kv = static_cast<int>(sh.heads_kv);
  params.group = static_cast<int>(sh.heads_q / sh.heads_kv);
  params.q_stride = sh.heads_q * sh.head_dim;
  params.kv_stride = sh.heads_kv * sh.head_dim;
  params.scale_log2 = static_cast<float>(static_cast<double>(problem.softmax_scale()) * 1.4426950408889634);
  // Scale 0 (uniform weights): a tiny positive scale gives the same weights, and keeps hidden keys'
  // scaled scores at -inf rather than 0 * inf = NaN.
  if (params.scale_log2 == 0.0f) params.scale_log2 = 1e-30f;
}

// Key lengths: in the parameters for small batches, else uploaded in stream order (the pool
// allocation is freed in stream order after the kernel, also when the launch throws).
class KeyLengths {
 public:
  KeyLengths(const AttentionProblem& problem, FlashParams& params)
      : stream_(dattn::cuda::stream_or_current(problem.stream)) {
    if (problem.key_lengths.empty()) return;
    std::vector<int> lengths(problem.key_lengths.begin(), problem.key_lengths.end());
    if (problem.shape.batch <= cuda_impl::kInlineLengths) {
      params.lengths_mode = 1;
      for (std::size_t b = 0; b < lengths.size(); ++b) params.inline_lengths[b] = lengths[b];
    } else {
      params.lengths_mode = 2;
      const std::size_t bytes = lengths.size() * sizeof(int);
      DATTN_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&ptr_), bytes, stream_));
      DATTN_CUDA_CHECK(cudaMemcpyAsync(ptr_, lengths.data(), bytes, cudaMemcpyHostToDevice, stream_));
      params.key_lengths = ptr_;
    }
  }
  ~KeyLengths() {
    if (ptr_) cudaFreeAsync(ptr_, stream_);
  }
  KeyLengths(const KeyLengths&) = delete;
  KeyLengths& operator=(const KeyLengths&) = delete;

 private:
  int* ptr_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

}  // namespace

Support flash_cuda_supports(const AttentionShape& shape, int compute_capability) {
  if (compute_capability < 80)
    return Support::no("needs compute capability 8.0 or newer (found " + std::to_string(compute_capability / 10) +
                       "." + std::to_string(compute_capability % 10) + ")");
  if (shape.dtype != DType::BF16 && shape.dtype != DType::F16)
    return Support::no("dtype " + std::string(dtype_name(shape.dtype)) + " not in {bf16, fp16}");
  if (shape.head_dim != 32 && shape.head_dim != 64 && shape.head_dim != 128)
    return Support::no("head_dim " + std::to_string(shape.head_dim) + " not in {32, 64, 128}");
  if (shape.mask == MaskKind::General) return Support::no("general masks are supported only by TORCH_SDPA");
  constexpr std::int64_t kIntMax = 0x7fffffff;
  if (shape.seq_q > kIntMax || shape.seq_k > kIntMax)
    return Support::no("sequence lengths above 2^31 - 1 are not supported by the CUDA FLASH_ATTN kernel");
  if (shape.heads_q > 65535 || shape.batch > 65535)
    return Support::no("more than 65535 heads or batch items are not supported by the CUDA FLASH_ATTN kernel");
  return Support::yes();
}

void flash_attention_cuda(const AttentionProblem& problem, KernelChoice kernel) {
  const AttentionShape& sh = problem.shape;
  if (sh.batch == 0 || sh.seq_q == 0 || sh.heads_q == 0) return;  // nothing to write
  if (flash_hopper_handles(problem, kernel)) return flash_attention_hopper(problem);  // sm_90a wgmma/TMA kernel
  FlashParams params;
  fill_params(problem, params, "FLASH_ATTN (cuda)");
  const KeyLengths lengths(problem, params);
  const auto stream = dattn::cuda::stream_or_current(problem.stream);
  const int batch = static_cast<int>(sh.batch), head_dim = static_cast<int>(sh.head_dim);
  const bool bf16 = sh.dtype == DType::BF16;
  if (sh.causal()) {
    if (bf16) run_sm80<__nv_bfloat16, true>(params, head_dim, batch, stream);
    else run_sm80<__half, true>(params, head_dim, batch, stream);
  } else {
    if (bf16) run_sm80<__nv_bfloat16, false>(params, head_dim, batch, stream);
    else run_sm80<__half, false>(params, head_dim, batch, stream);
  }
}

Support flash_cuda_sparse_supports(const AttentionShape& shape, int compute_capability, int block_size) {
  if (shape.mask == MaskKind::Causal) return Support::no("causal masks are supported only by FLASH_ATTN and TORCH_SDPA");
  if (block_size != 64 && block_size != 128)
    return Support::no("block_size " + std::to_string(block_size) + " is not 64 or 128");
  return flash_cuda_supports(shape, compute_capability);
}

void flash_attention_cuda_sparse(const AttentionProblem& problem, const sparse::DeviceKeyBlocks& blocks) {
  const AttentionShape& sh = problem.shape;
  if (sh.batch == 0 || sh.seq_q == 0 || sh.heads_q == 0) return;
  if (sh.causal()) throw std::logic_error("SPARSE_BLOCK (cuda): causal problems are refused by its predicate");
  const std::int64_t bs = blocks.block_size;
  if (bs != 64 && bs != 128)
    throw std::logic_error("SPARSE_BLOCK (cuda): block_size " + std::to_string(bs) + " is not 64 or 128");
  if (blocks.query_blocks != (sh.seq_q + bs - 1) / bs || blocks.key_blocks != (sh.seq_k + bs - 1) / bs ||
      blocks.blocks == nullptr || blocks.counts == nullptr)
    throw std::logic_error("SPARSE_BLOCK (cuda): the key block lists do not match " + sh.describe());
  FlashSparseParams params;
  fill_params(problem, params, "SPARSE_BLOCK (cuda)");
  params.blocks = blocks.blocks;
  params.counts = blocks.counts;
  params.query_blocks = blocks.query_blocks;
  params.key_blocks = blocks.key_blocks;
  const KeyLengths lengths(problem, params);
  const auto stream = dattn::cuda::stream_or_current(problem.stream);
  const int batch = static_cast<int>(sh.batch), head_dim = static_cast<int>(sh.head_dim);
  const bool bf16 = sh.dtype == DType::BF16;
  if (bs == 128) {
    if (bf16) run_sm80_sparse<__nv_bfloat16, 128>(params, head_dim, batch, stream);
    else run_sm80_sparse<__half, 128>(params, head_dim, batch, stream);
  } else {
    if (bf16) run_sm80_sparse<__nv_bfloat16, 64>(params, head_dim, batch, stream);
    else run_sm80_sparse<__half, 64>(params, head_dim, batch, stream);
  }
}

}  // namespace dattn::flash
