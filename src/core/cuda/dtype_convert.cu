// The kernels behind dtype_convert.h: one grid-stride loop per (from, to) pair, through float32 as the
// host conversions go (Tensor::to(dtype): to_f32, then from_f32).
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/cuda/check.cuh"
#include "core/cuda/dtype_convert.cuh"
#include "core/cuda/dtype_convert.h"

namespace dattn::cuda {
namespace {

struct F32 {
  using Bits = float;
  __device__ static float load(float v) { return v; }
  __device__ static float store(float v) { return v; }
};
struct BF16 {
  using Bits = std::uint16_t;
  __device__ static float load(std::uint16_t v) { return bf16_bits_to_f32(v); }
  __device__ static std::uint16_t store(float v) { return f32_to_bf16_bits(v); }
};
struct F16 {
  using Bits = std::uint16_t;
  __device__ static float load(std::uint16_t v) { return f16_bits_to_f32(v); }
  __device__ static std::uint16_t store(float v) { return f32_to_f16_bits(v); }
};

template <class From, class To>
__global__ void convert_kernel(const typename From::Bits* src, typename To::Bits* dst, std::size_t n) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    dst[i] = To::store(From::load(src[i]));
}

template <class From, class To>
void launch(const void* src, void* dst, std::size_t n, cudaStream_t s) {
  constexpr unsigned kThreads = 256;
  // Enough blocks to fill the GPU several times over; the loop covers the rest.
  const std::size_t want = (n + kThreads - 1) / kThreads;
  const unsigned blocks = static_cast<unsigned>(want < 65536 ? want : 65536);
  convert_kernel<From, To><<<blocks, kThreads, 0, s>>>(static_cast<const typename From::Bits*>(src),
                                                       static_cast<typename To::Bits*>(dst), n);
  DATTN_CUDA_CHECK(cudaGetLastError());
}

bool float_like(DType t) { return t == DType::F32 || t == DType::BF16 || t == DType::F16; }

template <class From>
void launch_to(DType to, const void* src, void* dst, std::size_t n, cudaStream_t s) {
  switch (to) {
    case DType::F32: return launch<From, F32>(src, dst, n, s);
    case DType::BF16: return launch<From, BF16>(src, dst, n, s);
    case DType::F16: return launch<From, F16>(src, dst, n, s);
    default: break;
  }
  throw std::logic_error("convert_async: no device conversion to " + std::string(dtype_name(to)));
}

}  // namespace

bool converts(DType from, DType to) { return float_like(from) && float_like(to); }

void convert_async(const void* src, DType from, void* dst, DType to, std::size_t n, void* stream) {
  if (!converts(from, to))
    throw std::logic_error("convert_async: no device conversion " + std::string(dtype_name(from)) + " -> " +
                           std::string(dtype_name(to)));
  if (!n) return;
  const auto s = static_cast<cudaStream_t>(stream);
  switch (from) {
    case DType::F32: return launch_to<F32>(to, src, dst, n, s);
    case DType::BF16: return launch_to<BF16>(to, src, dst, n, s);
    case DType::F16: return launch_to<F16>(to, src, dst, n, s);
    default: break;
  }
}

}  // namespace dattn::cuda
