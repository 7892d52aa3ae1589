// count_nonfinite on CUDA: a grid-stride pass, a warp reduction per warp and one atomic add per warp
// into two counters, then one 16-byte copy back (the only synchronisation).
#include <cstdint>

#include "dattn/core/device_memory.h"
#include "ops/cuda/common.cuh"
#include "ops/cuda/finite_cuda.h"

namespace dattn::ops::cuda {
namespace {

constexpr int kThreads = 256;

// Exponent all ones: Inf or NaN; NaN when the mantissa is not zero besides. Bits, not float compares,
// so -ffast-math style optimisations can never fold the test away.
__device__ __forceinline__ void classify(const void* p, Elt e, i64 i, unsigned long long& count, unsigned long long& nan) {
  bool special = false, is_nan = false;
  switch (e) {
    case Elt::F64: {
      const unsigned long long b = static_cast<const unsigned long long*>(p)[i];
      special = (b & 0x7FF0000000000000ull) == 0x7FF0000000000000ull;
      is_nan = special && (b & 0x000FFFFFFFFFFFFFull) != 0;
      break;
    }
    case Elt::F32: {
      const unsigned b = static_cast<const unsigned*>(p)[i];
      special = (b & 0x7F800000u) == 0x7F800000u;
      is_nan = special && (b & 0x007FFFFFu) != 0;
      break;
    }
    case Elt::BF16: {
      const unsigned short b = static_cast<const unsigned short*>(p)[i];
      special = (b & 0x7F80u) == 0x7F80u;
      is_nan = special && (b & 0x007Fu) != 0;
      break;
    }
    case Elt::F16: {
      const unsigned short b = static_cast<const unsigned short*>(p)[i];
      special = (b & 0x7C00u) == 0x7C00u;
      is_nan = special && (b & 0x03FFu) != 0;
      break;
    }
  }
  count += special;
  nan += is_nan;
}

__global__ void count_nonfinite_kernel(const void* x, Elt e, i64 n, unsigned long long* counters) {
  unsigned long long count = 0, nan = 0;
  for (i64 i = blockIdx.x * static_cast<i64>(blockDim.x) + threadIdx.x; i < n; i += static_cast<i64>(gridDim.x) * blockDim.x)
    classify(x, e, i, count, nan);
  for (int offset = 16; offset > 0; offset /= 2) {
    count += __shfl_down_sync(0xFFFFFFFFu, count, offset);
    nan += __shfl_down_sync(0xFFFFFFFFu, nan, offset);
  }
  if ((threadIdx.x & 31) == 0 && count) {
    atomicAdd(&counters[0], count);
    atomicAdd(&counters[1], nan);
  }
}

}  // namespace

NonFinite count_nonfinite(const Tensor& x) {
  const i64 n = x.numel();
  if (n == 0) return {};
  DeviceBuffer counters(2 * sizeof(unsigned long long));
  counters.fill(0);
  count_nonfinite_kernel<<<grid_for(n, kThreads), kThreads, 0, current_stream()>>>(
      x.data(), elt_of(x.dtype()), n, static_cast<unsigned long long*>(counters.get()));
  check_launch("count_nonfinite");
  unsigned long long host[2] = {0, 0};
  counters.download(host, sizeof host);
  return {static_cast<std::int64_t>(host[0]), static_cast<std::int64_t>(host[1])};
}

}  // namespace dattn::ops::cuda
