// SAGE_ATTN's attention steps (4, 6, 7) on any CUDA GPU, from the quantized buffers: a plain kernel that
// follows the CPU code (cpu_sage.cc) step by step, so that it agrees with the CPU to fp32 rounding. It
// is the path for devices without the Hopper kernel and for boolean key masks, and the reference the
// Hopper kernel is compared with on the same quantized inputs. Not tuned: one CTA per 16 query rows.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "attention/backends/sage_attn/cuda/sage_portable.h"
#include "attention/backends/sage_attn/sage_quant.h"
#include "core/cuda/check.cuh"

namespace dattn::sage::cuda_impl {
namespace {

constexpr int kThreads = 128;  // one thread per key of a 128-key tile in the score step
constexpr int kRows = static_cast<int>(kQBlock);

template <int D>
struct PortableSmem {
  int q[kRows][D / 4];       // the block's q8 rows as packed int8x4
  float p[kRows][kTileRows];  // scores, then the decoded p8
  __half v[kTileRows][D];     // the tile's decoded v8 (exact in fp16), keys in natural order
  float alpha[kRows], m[kRows], l[kRows];
};

__device__ __forceinline__ bool key_ok(const SageBuffers& s, int b, int j) {
  if (j >= s.kv_len[b]) return false;
  return s.key_mask == nullptr || s.key_mask[static_cast<std::int64_t>(b) * s.seq_k + j] != 0;
}

__device__ __forceinline__ float e4m3_round(float x) {
  const __nv_fp8_storage_t b = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(b, __NV_E4M3)));
}

template <typename T, int D>
__global__ void __launch_bounds__(kThreads) sage_portable_kernel(SageBuffers s, T* out) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  auto& sm = *reinterpret_cast<PortableSmem<D>*>(smem_raw);
  const int blk = blockIdx.x, h = blockIdx.y, b = blockIdx.z, tid = threadIdx.x;
  const int hk = h / (s.heads_q / s.heads_kv);
  const std::int64_t bh_q = static_cast<std::int64_t>(b) * s.heads_q + h;
  const std::int64_t bh_kv = static_cast<std::int64_t>(b) * s.heads_kv + hk;
  const int row0 = blk * kRows;
  const float sq = s.q_scale[bh_q * (s.seq_q_pad / kRows) + blk];
  for (int idx = tid; idx < kRows * D / 4; idx += kThreads)
    sm.q[idx / (D / 4)][idx % (D / 4)] =
        reinterpret_cast<const int*>(s.q8 + (bh_q * s.seq_q_pad + row0) * D)[idx];
  if (tid < kRows) {
    sm.m[tid] = -INFINITY;
    sm.l[tid] = 0.f;
  }
  // PV step: thread = (column, group of rows); D = 64 uses two row groups.
  constexpr int kGroups = kThreads / D, kRowsPer = kRows / kGroups;
  const int col = tid % D, r0 = (tid / D) * kRowsPer;
  float acc[kRowsPer];
#pragma unroll
  for (int r = 0; r < kRowsPer; ++r) acc[r] = 0.f;
  const int n_keys = s.kv_len[b];
  const std::int8_t* k8 = s.k8 + bh_kv * s.seq_k_pad * D;
  const std::uint8_t* v8t = s.v8t + bh_kv * D * s.seq_k_pad;
  __syncthreads();

  for (int t0 = 0; t0 < n_keys; t0 += kTileRows) {
    // Step 4: exact int32 dot products, one multiply by the product of the block scales.
    {
      const int j = t0 + tid;
      const bool valid = key_ok(s, b, j);
      const float sk = s.k_scale[bh_kv * (s.seq_k_pad / kKBlock) + j / kKBlock];
      int kw[D / 4];
#pragma unroll
      for (int c = 0; c < D / 4; ++c) kw[c] = reinterpret_cast<const int*>(k8 + static_cast<std::int64_t>(j) * D)[c];
      for (int r = 0; r < kRows; ++r) {
        int dot = 0;
#pragma unroll
        for (int c = 0; c < D / 4; ++c) dot = __dp4a(sm.q[r][c], kw[c], dot);
        sm.p[r][tid] = valid ? __fmul_rn(static_cast<float>(dot), __fmul_rn(sq, sk)) : -INFINITY;
      }
    }
    // V tile, decoded, keys back in natural order.
    for (int idx = tid; idx < D * (kTileRows / 16); idx += kThreads) {
      const int d = idx / (kTileRows / 16), g = idx % (kTileRows / 16);
      const uint4 u = *reinterpret_cast<const uint4*>(v8t + static_cast<std::int64_t>(d) * s.seq_k_pad + t0 + g * 16);
      const auto* bytes = reinterpret_cast<const std::uint8_t*>(&u);
#pragma unroll
      for (int pos = 0; pos < 16; ++pos)
        sm.v[g * 16 + v_position_key(pos)][d] = __half(__nv_cvt_fp8_to_halfraw(bytes[pos], __NV_E4M3));
    }
    __syncthreads();
    // Step 6, softmax part: warp w owns rows 4w .. 4w+3; lane holds keys lane + 32i.
    {
      const int warp = tid / 32, lane = tid % 32;
      for (int r = warp * 4; r < warp * 4 + 4; ++r) {
        float x[4], mx = -INFINITY;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          x[i] = sm.p[r][lane + 32 * i];
          mx = fmaxf(mx, x[i]);
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        const float m_old = sm.m[r], m_new = fmaxf(m_old, mx);
        float psum = 0.f;
        if (m_new == -INFINITY) {  // no valid key yet: the tile changes nothing
#pragma unroll
          for (int i = 0; i < 4; ++i) sm.p[r][lane + 32 * i] = 0.f;
        } else {
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const float p8 = e4m3_round(__fmul_rn(exp2f(__fsub_rn(x[i], m_new)), kPScale));
            psum = __fadd_rn(psum, p8);  // l from p8, in units of 448
            sm.p[r][lane + 32 * i] = p8;
          }
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) psum = __fadd_rn(psum, __shfl_xor_sync(0xffffffffu, psum, o));
        __syncwarp();
        if (lane == 0) {
          const float alpha = m_new == -INFINITY ? 1.f : exp2f(__fsub_rn(m_old, m_new));
          sm.alpha[r] = alpha;
          if (m_new != -INFINITY) {
            sm.l[r] = __fadd_rn(__fmul_rn(sm.l[r], alpha), psum);
            sm.m[r] = m_new;
          }
        }
      }
    }
    __syncthreads();
    // Step 6, P.V part: tile sums in key order (each product is exact in fp32).
#pragma unroll
    for (int r = 0; r < kRowsPer; ++r) {
      float t = 0.f;
      for (int jj = 0; jj < kTileRows; ++jj) t = __fadd_rn(t, __fmul_rn(sm.p[r0 + r][jj], __half2float(sm.v[jj][col])));
      acc[r] = __fadd_rn(__fmul_rn(acc[r], sm.alpha[r0 + r]), t);
    }
    __syncthreads();
  }
  // Step 7.
  const float sv = s.v_scale[bh_kv * D + col];
#pragma unroll
  for (int r = 0; r < kRowsPer; ++r) {
    const int i = row0 + r0 + r;
    if (i >= s.seq_q) continue;
    const float o = sm.m[r0 + r] == -INFINITY ? 0.f : __fdiv_rn(__fmul_rn(acc[r], sv), sm.l[r0 + r]);
    out[((static_cast<std::int64_t>(b) * s.seq_q + i) * s.heads_q + h) * D + col] = static_cast<T>(o);
  }
}

template <typename T, int D>
void launch(const SageBuffers& s, void* out, cudaStream_t stream) {
  const auto kernel = sage_portable_kernel<T, D>;
  constexpr int kSmem = sizeof(PortableSmem<D>);
  DATTN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  const dim3 grid(static_cast<unsigned>(s.seq_q_pad / kRows), static_cast<unsigned>(s.heads_q),
                  static_cast<unsigned>(s.batch));
  kernel<<<grid, kThreads, kSmem, stream>>>(s, static_cast<T*>(out));
  DATTN_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void sage_attend_portable(const SageBuffers& s, void* out, bool fp16, void* stream) {
  const auto st = static_cast<cudaStream_t>(stream);
  if (s.head_dim == 128)
    fp16 ? launch<__half, 128>(s, out, st) : launch<__nv_bfloat16, 128>(s, out, st);
  else if (s.head_dim == 64)
    fp16 ? launch<__half, 64>(s, out, st) : launch<__nv_bfloat16, 64>(s, out, st);
  else
    throw std::logic_error("SAGE_ATTN (cuda): head_dim " + std::to_string(s.head_dim) + " has no portable kernel");
}

}  // namespace dattn::sage::cuda_impl
