// quantize_rows_e4m3 on CUDA (ops/linear_fp8.h): one block per row, the row's amax by a block reduction,
// then every element divided by the scale and converted with the hardware's saturating e4m3 conversion.
// bf16/fp16 rows of a multiple of 8 take a 16-byte-access form that reads the row once.
// The arithmetic is the CPU's (ops/cpu/linear_fp8.cc) operation for operation: fmaxf ignores NaN as
// std::fmax does, __fdiv_rn is IEEE division whatever the compiler flags, so the bytes agree.
#include <cuda_fp8.h>

#include <cstdint>
#include <vector>

#include "ops/cuda/common.cuh"
#include "ops/cuda/e4m3_row.cuh"
#include "ops/cuda/linear_fp8.h"

namespace dattn::ops::cuda {
namespace {

constexpr int kThreads = 256;

// Rows >= rows (the padding up to a multiple of 16) are written as zeros, as are columns >= k.
__global__ void quantize_rows_kernel(const void* x, Elt e, i64 rows, i64 k, i64 padded_rows, i64 padded_k,
                                     std::uint8_t* q, float* scales) {
  __shared__ float scratch[32];
  for (i64 r = blockIdx.x; r < padded_rows; r += gridDim.x) {
    std::uint8_t* qr = q + r * padded_k;
    if (r >= rows) {
      for (i64 i = threadIdx.x; i < padded_k; i += blockDim.x) qr[i] = 0;
      continue;  // uniform over the block: no thread reaches the reduction's barriers
    }
    float amax = 0.0f;
    for (i64 i = threadIdx.x; i < k; i += blockDim.x) amax = fmaxf(amax, fabsf(load1(x, e, r * k + i)));
    amax = block_max(amax, scratch);
    const float s = amax == 0.0f ? 1.0f : __fdiv_rn(amax, 448.0f);
    if (threadIdx.x == 0) scales[r] = s;
    for (i64 i = threadIdx.x; i < padded_k; i += blockDim.x)
      qr[i] = i < k ? static_cast<std::uint8_t>(
                          __nv_cvt_float_to_fp8(__fdiv_rn(load1(x, e, r * k + i), s), __NV_SATFINITE, __NV_E4M3))
                    : std::uint8_t{0};
  }
}

// The same bytes for bf16 or fp16 rows of k % 8 == 0 at 16-byte aligned addresses: each thread holds up
// to kChunks chunks of 8 elements in registers (one read of the row), writes 8 codes at a time.
template <int kChunks>
__global__ void quantize_rows8_kernel(const void* x, Elt e, i64 rows, i64 k, i64 padded_rows, i64 padded_k,
                                      std::uint8_t* q, float* scales) {
  __shared__ float scratch[32];
  const i64 chunks = k / 8, padded_chunks = padded_k / 8;
  for (i64 r = blockIdx.x; r < padded_rows; r += gridDim.x) {
    uint2* qr = reinterpret_cast<uint2*>(q + r * padded_k);
    if (r >= rows) {
      zero_e4m3_row(padded_chunks, qr);
      continue;  // uniform over the block
    }
    const uint4* xr = reinterpret_cast<const uint4*>(static_cast<const std::uint16_t*>(x) + r * k);
    uint4 held[kChunks];
    float amax = 0.0f;
#pragma unroll
    for (int j = 0; j < kChunks; ++j) {
      const i64 c = threadIdx.x + i64{j} * blockDim.x;
      if (c < chunks) {
        held[j] = __ldcs(xr + c);  // read once
        amax = amax8(held[j], e, amax);
      }
    }
    write_e4m3_row(held, e, amax, chunks, padded_chunks, qr, scales + r, scratch);
  }
}

constexpr int kChunksPerThread = 8;  // rows up to 8 * 8 * kThreads = 16384 elements take the fast kernel

}  // namespace

Fp8Matrix quantize_rows_e4m3(const Tensor& x) {
  const std::int64_t k = x.ndim() ? x.dim(-1) : 1;
  const std::int64_t rows = x.ndim() ? shape_numel(Shape(x.shape().begin(), x.shape().end() - 1)) : 1;
  Fp8Matrix m;
  m.rows = rows;
  m.cols = k;
  const i64 rp = fp8_padded(rows), kp = fp8_padded(k);
  m.values = Tensor::empty({rp, kp}, DType::FP8_E4M3, Device::CUDA);
  m.scales = Tensor::empty({rows}, DType::F32, Device::CUDA);
  if (kp == 0) {  // empty rows: scale 1, as the CPU writes (the kernel, launched for no columns, would not)
    if (rows > 0) m.scales = Tensor::from_f32(std::vector<float>(static_cast<std::size_t>(rows), 1.0f), {rows}).to(Device::CUDA);
    return m;
  }
  if (rp == 0) return m;
  const unsigned blocks = static_cast<unsigned>(rp < 65535 * 16 ? rp : 65535 * 16);
  const bool fast = (x.dtype() == DType::BF16 || x.dtype() == DType::F16) && k % 8 == 0 &&
                    k <= i64{8} * kChunksPerThread * kThreads && can_vec8(x.data(), x.dtype());
  if (fast)
    quantize_rows8_kernel<kChunksPerThread><<<blocks, kThreads, 0, current_stream()>>>(
        x.data(), elt_of(x.dtype()), rows, k, rp, kp, m.values.data_as<std::uint8_t>(), m.scales.data_as<float>());
  else
    quantize_rows_kernel<<<blocks, kThreads, 0, current_stream()>>>(x.data(), elt_of(x.dtype()), rows, k, rp, kp,
                                                                    m.values.data_as<std::uint8_t>(),
                                                                    m.scales.data_as<float>());
  check_launch("quantize_rows_e4m3");
  return m;
}

}  // namespace dattn::ops::cuda
