// Token reductions on CUDA: one thread per (batch item, column), rows read coalesced across threads.
#include <algorithm>
#include <vector>

#include "ops/cuda/common.cuh"
#include "ops/cuda/cuda_ops.h"

namespace dattn::ops::cuda {
namespace {

// The counts travel as a kernel argument (no upload, no synchronisation): up to kMaxBatch per launch.
constexpr int kMaxBatch = 32;
struct Counts {
  i64 v[kMaxBatch];
};

__global__ void mean_rows_kernel(const void* x, Elt e, Counts counts, i64 first, float* y, i64 n, i64 d) {
  const i64 c = i64{blockIdx.x} * blockDim.x + threadIdx.x;
  const i64 b = first + blockIdx.y;
  if (c >= d) return;
  const i64 rows = counts.v[blockIdx.y];
  float s = 0;
  for (i64 r = 0; r < rows; ++r) s += load1(x, e, (b * n + r) * d + c);
  y[b * d + c] = s / static_cast<float>(rows);
}

}  // namespace

Tensor mean_rows(const Tensor& x, const std::vector<std::int64_t>& counts) {
  const i64 b = x.dim(0), n = x.dim(1), d = x.dim(2);
  Tensor y = Tensor::empty({b, d}, DType::F32, Device::CUDA);
  constexpr int kThreads = 256;
  for (i64 first = 0; first < b && d > 0; first += kMaxBatch) {
    const i64 m = std::min<i64>(kMaxBatch, b - first);
    Counts c{};
    for (i64 i = 0; i < m; ++i) c.v[i] = counts[static_cast<std::size_t>(first + i)];
    const dim3 grid(static_cast<unsigned>((d + kThreads - 1) / kThreads), static_cast<unsigned>(m));
    mean_rows_kernel<<<grid, kThreads, 0, current_stream()>>>(x.data(), elt_of(x.dtype()), c, first,
                                                              y.data_as<float>(), n, d);
    check_launch("mean_rows");
  }
  return y;
}

}  // namespace dattn::ops::cuda
