#pragma once
// Shared pieces of the op kernels: element access by a runtime element type, 8-wide vector access,
// block reductions and launch helpers. Kernels take the element type as a value rather than a template
// parameter: the branch is uniform over the launch, so it costs a few instructions per 8 elements of
// memory-bound work, and one kernel serves every mix of dtypes the ops allow (bf16 x with fp32 weights).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>
#include <string>

#include "core/cuda/check.cuh"
#include "core/cuda/stream.cuh"
#include "dattn/core/error.h"
#include "dattn/core/tensor.h"

namespace dattn::ops::cuda {

using i64 = std::int64_t;
using ::dattn::cuda::current_stream;

enum class Elt : int { F32 = 0, BF16 = 1, F16 = 2, F64 = 3 };

inline Elt elt_of(DType d) {
  switch (d) {
    case DType::F32: return Elt::F32;
    case DType::BF16: return Elt::BF16;
    case DType::F16: return Elt::F16;
    case DType::F64: return Elt::F64;
    default: break;
  }
  throw UserError("cuda ops: dtype " + std::string(dtype_name(d)) + " is not fp32, bf16, fp16 or fp64");
}

__device__ __forceinline__ float load1(const void* p, Elt e, i64 i) {
  switch (e) {
    case Elt::BF16: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    case Elt::F16: return __half2float(static_cast<const __half*>(p)[i]);
    case Elt::F64: return static_cast<float>(static_cast<const double*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}

// Rounds to nearest even, as the host conversions do.
__device__ __forceinline__ void store1(void* p, Elt e, i64 i, float v) {
  switch (e) {
    case Elt::BF16: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v); break;
    case Elt::F16: static_cast<__half*>(p)[i] = __float2half_rn(v); break;
    case Elt::F64: static_cast<double*>(p)[i] = v; break;
    default: static_cast<float*>(p)[i] = v; break;
  }
}

// Eight bf16 or fp16 values packed in 16 bytes, to floats.
__device__ __forceinline__ void unpack8(uint4 raw, Elt e, float (&v)[8]) {
  const std::uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    if (e == Elt::BF16) {
      const float2 f = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&w[k]));
      v[2 * k] = f.x, v[2 * k + 1] = f.y;
    } else {
      const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&w[k]));
      v[2 * k] = f.x, v[2 * k + 1] = f.y;
    }
  }
}

// Eight floats rounded (nearest even) to bf16 or fp16 and packed in 16 bytes.
__device__ __forceinline__ uint4 pack8(Elt e, const float (&v)[8]) {
  std::uint32_t w[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    if (e == Elt::BF16) {
      const __nv_bfloat162 h = __floats2bfloat162_rn(v[2 * k], v[2 * k + 1]);
      w[k] = *reinterpret_cast<const std::uint32_t*>(&h);
    } else {
      const __half2 h = __floats2half2_rn(v[2 * k], v[2 * k + 1]);
      w[k] = *reinterpret_cast<const std::uint32_t*>(&h);
    }
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// Elements [i, i + 8) in one or two 16-byte transactions; p + i must be 16-byte aligned (fp32, bf16,
// fp16 only: vector paths are chosen by can_vec8, which rejects fp64).
// Streaming = true loads with the evict-first policy (__ldcs): for activations read once, so that they do
// not push the per-row parameters (modulation vectors, rotary tables) that every row re-reads out of L1.
template <bool Streaming = false>
__device__ __forceinline__ void load8(const void* p, Elt e, i64 i, float (&v)[8]) {
  if (e == Elt::F32) {
    const float4* q = reinterpret_cast<const float4*>(static_cast<const float*>(p) + i);
    const float4 a = Streaming ? __ldcs(q) : q[0], b = Streaming ? __ldcs(q + 1) : q[1];
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
    return;
  }
  const uint4* q = reinterpret_cast<const uint4*>(static_cast<const std::uint16_t*>(p) + i);
  unpack8(Streaming ? __ldcs(q) : *q, e, v);
}

__device__ __forceinline__ void store8(void* p, Elt e, i64 i, const float (&v)[8]) {
  if (e == Elt::F32) {
    float4* q = reinterpret_cast<float4*>(static_cast<float*>(p) + i);
    q[0] = make_float4(v[0], v[1], v[2], v[3]);
    q[1] = make_float4(v[4], v[5], v[6], v[7]);
    return;
  }
  *reinterpret_cast<uint4*>(static_cast<std::uint16_t*>(p) + i) = pack8(e, v);
}

// Whether 8-wide access works for this tensor's memory: a 16-byte aligned start and a float dtype of
// 2 or 4 bytes. Callers add their own condition on the row length (a multiple of 8).
inline bool can_vec8(const void* p, DType d) {
  return (d == DType::F32 || d == DType::BF16 || d == DType::F16) && reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

// op over the block; every thread gets the result. `scratch` holds 32 floats; blockDim.x is a multiple
// of 32; `identity` fills the lanes past the block's warps. Two calls in a row need a __syncthreads()
// between them, which the function does at its start.
template <class Op>
__device__ __forceinline__ float block_reduce(float v, float* scratch, Op op, float identity) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : identity;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ __forceinline__ float block_sum(float v, float* scratch) {
  return block_reduce(v, scratch, [](float a, float b) { return a + b; }, 0.0f);
}

// The max over the block (fmaxf: a NaN lane is ignored).
__device__ __forceinline__ float block_max(float v, float* scratch) {
  return block_reduce(v, scratch, [](float a, float b) { return fmaxf(a, b); }, -FLT_MAX);
}

// Grid size for a grid-stride loop over n work items with `threads` per block: enough blocks to fill
// the GPU several times over, never more than needed.
inline unsigned grid_for(i64 n, int threads) {
  const i64 blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 65535 * 8 ? 65535 * 8 : blocks));
}

// Reports a failed launch (bad configuration) at once; kernel faults show at the next synchronisation.
inline void check_launch(const char* op) {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) throw std::runtime_error(std::string(op) + " (cuda): launch failed: " + cudaGetErrorString(err));
}

}  // namespace dattn::ops::cuda
