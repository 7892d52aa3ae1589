// FLASH_ATTN on CUDA: the support predicate, the kernel choice per (dtype, head dim) and the launch.
// One entry point (flash_attention_cuda) picks the kernel: today the portable sm_80 kernel for every
// supported shape; a Hopper (wgmma/TMA) kernel slots in at choose_kernel().
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "attention/backends/flash_attn/cuda/flash_cuda.h"
#include "attention/backends/flash_attn/cuda/flash_fwd_kernel.cuh"
#include "core/cuda/check.cuh"
#include "dattn/core/error.h"

namespace dattn::flash {
namespace {

using cuda_impl::FlashConfig;
using cuda_impl::FlashParams;

// Tiles of the sm_80 kernel: 8 warps x 16 query rows (128 rows per CTA), 64-key K/V tiles, Q fragments
// held in registers (its shared memory is reused by the second K/V buffer). 70 KB of shared memory
// at D=128, so it also fits the 99 KB per-block limit of sm_86/sm_89.
template <typename T, int D>
using Sm80Config = FlashConfig<T, D, /*warps*/ 8, /*m tiles*/ 1, /*block N*/ 64, /*Q in regs*/ true, /*min CTAs*/ 1>;

template <class Cfg>
void launch(const FlashParams& params, int batch, cudaStream_t stream) {
  const auto kernel = cuda_impl::flash_fwd_kernel<Cfg>;
  int device = 0, optin = 0;
  DATTN_CUDA_CHECK(cudaGetDevice(&device));
  DATTN_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  if (Cfg::kSmemBytes > optin)
    throw std::runtime_error("FLASH_ATTN (cuda): the kernel needs " + std::to_string(Cfg::kSmemBytes) +
                             " bytes of shared memory per block, the device allows " + std::to_string(optin));
  // Set on every launch: the attribute is per device, and the call is cheap next to the kernel.
  DATTN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::kSmemBytes));
  const dim3 grid((params.seq_q + Cfg::kBlockM - 1) / Cfg::kBlockM, params.heads_q, batch);
  kernel<<<grid, Cfg::kThreads, Cfg::kSmemBytes, stream>>>(params);
  DATTN_CUDA_CHECK(cudaGetLastError());
}

enum class Kernel { Sm80 };

// The kernel for a shape on the current device. Every supported shape has the sm_80 kernel; faster
// architecture-specific kernels take over the shapes they handle here.
Kernel choose_kernel(const AttentionShape&, int /*compute_capability*/) { return Kernel::Sm80; }

template <typename T>
void run_sm80(const FlashParams& params, int head_dim, int batch, cudaStream_t stream) {
  switch (head_dim) {
    case 32: return launch<Sm80Config<T, 32>>(params, batch, stream);
    case 64: return launch<Sm80Config<T, 64>>(params, batch, stream);
    case 128: return launch<Sm80Config<T, 128>>(params, batch, stream);
    default: throw std::logic_error("FLASH_ATTN (cuda): head_dim " + std::to_string(head_dim) + " has no kernel");
  }
}

int current_compute_capability() {
  int device = 0, major = 0, minor = 0;
  DATTN_CUDA_CHECK(cudaGetDevice(&device));
  DATTN_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  DATTN_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  return major * 10 + minor;
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
  params.scale_log2 = static_cast<float>(static_cast<double>(problem.softmax_scale()) * 1.4426950408889634);
  const auto stream = static_cast<cudaStream_t>(problem.stream);

  // Key lengths: in the parameters for small batches, else uploaded in stream order (the pool
  // allocation is freed in stream order after the kernel).
  int* lengths_dev = nullptr;
  if (!problem.key_lengths.empty()) {
    std::vector<int> lengths(problem.key_lengths.begin(), problem.key_lengths.end());
    if (sh.batch <= cuda_impl::kInlineLengths) {
      params.lengths_mode = 1;
      for (std::size_t b = 0; b < lengths.size(); ++b) params.inline_lengths[b] = lengths[b];
    } else {
      params.lengths_mode = 2;
      const std::size_t bytes = lengths.size() * sizeof(int);
      DATTN_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&lengths_dev), bytes, stream));
      DATTN_CUDA_CHECK(cudaMemcpyAsync(lengths_dev, lengths.data(), bytes, cudaMemcpyHostToDevice, stream));
      params.key_lengths = lengths_dev;
    }
  }

  const int batch = static_cast<int>(sh.batch), head_dim = static_cast<int>(sh.head_dim);
  switch (choose_kernel(sh, current_compute_capability())) {
    case Kernel::Sm80:
      if (sh.dtype == DType::BF16)
        run_sm80<__nv_bfloat16>(params, head_dim, batch, stream);
      else
        run_sm80<__half>(params, head_dim, batch, stream);
      break;
  }
  if (lengths_dev) DATTN_CUDA_CHECK(cudaFreeAsync(lengths_dev, stream));
}

}  // namespace dattn::flash
