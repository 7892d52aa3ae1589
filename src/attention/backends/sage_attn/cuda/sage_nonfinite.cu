// SAGE_ATTN: the NaN taken out before quantizing, put back into the output (see sage_nonfinite.h).
#include <cuda_runtime.h>

#include <cstdint>

#include "attention/backends/sage_attn/cuda/sage_nonfinite.h"
#include "core/cuda/check.cuh"

namespace dattn::sage::cuda_impl {
namespace {

constexpr int kThreads = 256;
constexpr unsigned kBlocks = 132;  // one wave on an H200; the loop strides over any number of rows

// One warp per output row (b, i, h) of [B, Sq, Hq, D], 16-bit elements.
__global__ void __launch_bounds__(kThreads) put_back_kernel(SageBuffers s, std::uint16_t* out, std::uint16_t nan) {
  if (*s.any_bad == 0) return;  // finite inputs: every thread leaves after one cached load
  const int D = s.head_dim, group = s.heads_q / s.heads_kv, lane = threadIdx.x % 32;
  const std::int64_t rows = std::int64_t(s.batch) * s.seq_q * s.heads_q;
  const std::int64_t warps = std::int64_t(gridDim.x) * (kThreads / 32);
  for (std::int64_t row = blockIdx.x * (kThreads / 32) + threadIdx.x / 32; row < rows; row += warps) {
    const int h = static_cast<int>(row % s.heads_q);
    const int i = static_cast<int>(row / s.heads_q % s.seq_q);
    const int b = static_cast<int>(row / s.heads_q / s.seq_q);
    const std::int64_t bkv = std::int64_t(b) * s.heads_kv + h / group;
    const unsigned flags = s.kv_flags[bkv];
    if (flags & kNoValidKey) continue;  // a fully masked row is zero whatever its query holds
    const bool whole = (flags & kKeyBad) || s.q_bad[(std::int64_t(b) * s.heads_q + h) * s.seq_q_pad + i];
    if (!whole && !(flags & kValueBad)) continue;
    for (int d = lane; d < D; d += 32)
      if (whole || s.v_bad[bkv * D + d]) out[row * D + d] = nan;
  }
}

}  // namespace

void sage_put_back_nonfinite(const SageBuffers& buffers, void* out, bool fp16, void* stream) {
  // Quiet NaN in fp16 (0x7E00) or bf16 (0x7FC0).
  put_back_kernel<<<kBlocks, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      buffers, static_cast<std::uint16_t*>(out), fp16 ? std::uint16_t{0x7E00} : std::uint16_t{0x7FC0});
  DATTN_CUDA_CHECK(cudaGetLastError());
}

}  // namespace dattn::sage::cuda_impl
