// SAGE_ATTN on Hopper: TMA descriptors of the quantized buffers and the launch (persistent grid, one CTA
// per SM; consumer ping-pong off by default, see flash::HopperTuning::sage_pingpong).
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "attention/kernels/flash/hopper/hopper_tuning.h"
#include "attention/kernels/sm90/tma_encode.h"
#include "attention/backends/sage_attn/cuda/hopper/sage_hopper.h"
#include "attention/backends/sage_attn/cuda/hopper/sage_hopper_kernel.cuh"
#include "core/cuda/check.cuh"
#include "core/cuda/stream.cuh"

namespace dattn::sage::cuda_impl {
namespace {

using hopper::SageConfig;
using hopper::SageHopperParams;
constexpr const char* kWho = "SAGE_ATTN (hopper)";

int device_attribute(cudaDeviceAttr attr) {
  int device = 0, value = 0;
  DATTN_CUDA_CHECK(cudaGetDevice(&device));
  DATTN_CUDA_CHECK(cudaDeviceGetAttribute(&value, attr, device));
  return value;
}

// An 8-bit [outer][rows][cols] array as a 4-D map {cols, rows, outer, 1} with box {box_cols, box_rows, 1, 1}.
CUtensorMap byte_map(const void* ptr, std::uint64_t cols, std::uint64_t rows, std::uint64_t outer, int box_cols,
                     int box_rows, CUtensorMapSwizzle swizzle) {
  const std::uint64_t dims[4] = {cols, rows, outer, 1};
  const std::uint64_t strides[3] = {cols, cols * rows, cols * rows * outer};
  const std::uint32_t box[4] = {static_cast<std::uint32_t>(box_cols), static_cast<std::uint32_t>(box_rows), 1, 1};
  return hopper_tma::encode_tiled(kWho, CU_TENSOR_MAP_DATA_TYPE_UINT8, 4, ptr, dims, strides, box, swizzle);
}

template <int D, bool kFp16, bool kPingPong>
void launch_variant(const SageHopperParams& params, cudaStream_t stream) {
  using Cfg = SageConfig<D>;
  const auto kernel = hopper::sage_hopper_kernel<D, kFp16, kPingPong>;
  DATTN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::kSmemBytes));
  const int sms = device_attribute(cudaDevAttrMultiProcessorCount);
  const dim3 grid(static_cast<unsigned>(std::min(params.total_tiles, sms)));
  kernel<<<grid, Cfg::kThreads, Cfg::kSmemBytes, stream>>>(params);
  DATTN_CUDA_CHECK(cudaGetLastError());
}

template <int D, bool kFp16>
void launch(const SageHopperParams& params, cudaStream_t stream) {
  flash::hopper_tuning().sage_pingpong ? launch_variant<D, kFp16, true>(params, stream)
                                       : launch_variant<D, kFp16, false>(params, stream);
}

}  // namespace

bool sage_hopper_supports(const AttentionProblem& problem) {
  const AttentionShape& sh = problem.shape;
  const int cc = device_attribute(cudaDevAttrComputeCapabilityMajor) * 10 +
                 device_attribute(cudaDevAttrComputeCapabilityMinor);
  return cc >= 90 && cc < 100 && (sh.head_dim == 64 || sh.head_dim == 128) && problem.key_mask == nullptr &&
         reinterpret_cast<std::uintptr_t>(problem.out) % 16 == 0 && sh.batch <= 65535 && sh.heads_q <= 65535;
}

void sage_attend_hopper(const SageBuffers& s, const AttentionProblem& problem) {
  const AttentionShape& sh = problem.shape;
  const bool fp16 = sh.dtype == DType::F16;
  const int D = s.head_dim;
  const auto qk_swizzle = D == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B;
  SageHopperParams p{};
  const std::uint64_t bh_q = std::uint64_t(s.batch) * s.heads_q, bh_kv = std::uint64_t(s.batch) * s.heads_kv;
  p.tm_q = byte_map(s.q8, D, s.seq_q_pad, bh_q, D, kTileRows, qk_swizzle);
  p.tm_k = byte_map(s.k8, D, s.seq_k_pad, bh_kv, D, kTileRows, qk_swizzle);
  p.tm_v = byte_map(s.v8t, s.seq_k_pad, D, bh_kv, kTileRows, D, CU_TENSOR_MAP_SWIZZLE_128B);
  p.tm_o = hopper_tma::bshd16_map(kWho, problem.out, sh.batch, sh.seq_q, sh.heads_q, D, fp16, kTileRows / 2);
  p.out = problem.out;
  p.q_scale = s.q_scale;
  p.k_scale = s.k_scale;
  p.v_scale = s.v_scale;
  p.kv_len = s.kv_len;
  p.seq_q = s.seq_q;
  p.seq_q_pad = s.seq_q_pad;
  p.seq_k_pad = s.seq_k_pad;
  p.heads_q = s.heads_q;
  p.heads_kv = s.heads_kv;
  p.group = s.heads_q / s.heads_kv;
  p.m_blocks = s.seq_q_pad / kTileRows;
  const std::int64_t tiles = std::int64_t(p.m_blocks) * s.heads_q * s.batch;
  if (tiles > 0x7fffffff) throw std::runtime_error(std::string(kWho) + ": too many work tiles");
  p.total_tiles = static_cast<int>(tiles);
  const auto stream = dattn::cuda::stream_or_current(problem.stream);
  if (D == 128)
    fp16 ? launch<128, true>(p, stream) : launch<128, false>(p, stream);
  else
    fp16 ? launch<64, true>(p, stream) : launch<64, false>(p, stream);
}

}  // namespace dattn::sage::cuda_impl
