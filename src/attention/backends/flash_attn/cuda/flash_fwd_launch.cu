// FLASH_ATTN on CUDA: the support predicate, the kernel choice per (dtype, head dim) and the launch.
// One entry point (flash_attention_cuda) picks the kernel: the Hopper (wgmma/TMA) kernel for the
// problems it handles (hopper/), the portable sm_80 kernel of flash_fwd_kernel.cuh for all others.
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention/backends/flash_attn/cuda/flash_cuda.h"
#include "attention/backends/flash_attn/cuda/flash_fwd_kernel.cuh"
#include "attention/backends/flash_attn/cuda/hopper/flash_hopper.h"
#include "core/cuda/check.cuh"
#include "dattn/core/error.h"

namespace dattn::flash {
namespace {

using cuda_impl::FlashConfig;
using cuda_impl::FlashParams;

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

template <class Cfg>
void launch(const FlashParams& params, int batch, cudaStream_t stream) {
  const auto kernel = cuda_impl::flash_fwd_kernel<Cfg>;
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

template <typename T>
void run_sm80(const FlashParams& params, int head_dim, int batch, cudaStream_t stream) {
  switch (head_dim) {
    case 32: return launch<D32<T>>(params, batch, stream);
    case 64: return launch<D64<T>>(params, batch, stream);
    case 128:
      if (fits_per_sm(D128<T>::kSmemBytes, 2)) return launch<D128<T>>(params, batch, stream);
      return launch<D128Small<T>>(params, batch, stream);
    default: throw std::logic_error("FLASH_ATTN (cuda): head_dim " + std::to_string(head_dim) + " has no kernel");
  }
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

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

void flash_attention_cuda(const AttentionProblem& problem) {
  const AttentionShape& sh = problem.shape;
  if (sh.batch == 0 || sh.seq_q == 0 || sh.heads_q == 0) return;  // nothing to write
  if (flash_hopper_handles(problem)) return flash_attention_hopper(problem);  // sm_90a wgmma/TMA kernel
  if (!aligned16(problem.q) || !aligned16(problem.k) || !aligned16(problem.v) || !aligned16(problem.out))
    throw UserError("FLASH_ATTN (cuda): q, k, v and out must be 16-byte aligned device pointers");
  FlashParams params;
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
  const auto stream = static_cast<cudaStream_t>(problem.stream);

  // Key lengths: in the parameters for small batches, else uploaded in stream order (the pool
  // allocation is freed in stream order after the kernel, also when the launch throws).
  struct StreamFree {
    int* ptr = nullptr;
    cudaStream_t stream = nullptr;
    ~StreamFree() {
      if (ptr) cudaFreeAsync(ptr, stream);
    }
  } lengths_dev{nullptr, stream};
  if (!problem.key_lengths.empty()) {
    std::vector<int> lengths(problem.key_lengths.begin(), problem.key_lengths.end());
    if (sh.batch <= cuda_impl::kInlineLengths) {
      params.lengths_mode = 1;
      for (std::size_t b = 0; b < lengths.size(); ++b) params.inline_lengths[b] = lengths[b];
    } else {
      params.lengths_mode = 2;
      const std::size_t bytes = lengths.size() * sizeof(int);
      DATTN_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&lengths_dev.ptr), bytes, stream));
      DATTN_CUDA_CHECK(cudaMemcpyAsync(lengths_dev.ptr, lengths.data(), bytes, cudaMemcpyHostToDevice, stream));
      params.key_lengths = lengths_dev.ptr;
    }
  }

  const int batch = static_cast<int>(sh.batch), head_dim = static_cast<int>(sh.head_dim);
  if (sh.dtype == DType::BF16)
    run_sm80<__nv_bfloat16>(params, head_dim, batch, stream);
  else
    run_sm80<__half>(params, head_dim, batch, stream);
}

}  // namespace dattn::flash
