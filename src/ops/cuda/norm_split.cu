// sum_squares and rms_norm_with_sums on CUDA (norm_split.h), with the CPU kernels' arithmetic: the squares
// summed in double, the scale 1 / sqrt(sum / width + eps) in double, each output rounded once. Only the
// order of the double additions differs from the CPU's (a warp's strided partial sums).
#include "ops/cuda/common.cuh"
#include "ops/cuda/cuda_ops.h"

namespace dattn::ops::cuda {
namespace {

constexpr int kThreads = 256;

// One warp per row (blockDim.x a multiple of 32, so a warp's lanes share the row).
__global__ void sum_squares_kernel(const void* x, Elt ex, double* out, i64 rows, i64 d) {
  const i64 row = (i64{blockIdx.x} * blockDim.x + threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x % 32);
  if (row >= rows) return;
  const i64 base = row * d;
  double s = 0;
  for (i64 i = lane; i < d; i += 32) {
    const double v = load1(x, ex, base + i);
    s += v * v;
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) out[row] = s;
}

__global__ void rms_norm_with_sums_kernel(const void* x, Elt ex, void* y, const double* sums, const void* w, Elt ew,
                                          i64 n, i64 d, double width, double eps) {
  const i64 stride = i64{gridDim.x} * blockDim.x;
  for (i64 i = i64{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
    const i64 r = i / d;
    const double inv = 1.0 / sqrt(sums[r] / width + eps);
    const double g = w ? static_cast<double>(load1(w, ew, i - r * d)) : 1.0;
    store1(y, ex, i, static_cast<float>(static_cast<double>(load1(x, ex, i)) * inv * g));
  }
}

}  // namespace

Tensor sum_squares(const Tensor& x) {
  const i64 d = x.dim(-1), rows = d ? x.numel() / d : 0;
  Tensor sums = Tensor::empty(Shape(x.shape().begin(), x.shape().end() - 1), DType::F64, Device::CUDA);
  if (rows == 0) return sums;
  if (d == 0) return Tensor::zeros(sums.shape(), DType::F64).to(Device::CUDA);
  constexpr int kRowsPerBlock = kThreads / 32;
  const auto blocks = static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
  sum_squares_kernel<<<blocks, kThreads, 0, current_stream()>>>(x.data(), elt_of(x.dtype()), sums.data_as<double>(),
                                                                rows, d);
  check_launch("sum_squares");
  return sums;
}

Tensor rms_norm_with_sums(const Tensor& x, const Tensor& sums, std::int64_t width, float eps, const Tensor& weight) {
  Tensor y = Tensor::empty(x.shape(), x.dtype(), Device::CUDA);
  const i64 n = x.numel();
  if (n == 0) return y;
  rms_norm_with_sums_kernel<<<grid_for(n, kThreads), kThreads, 0, current_stream()>>>(
      x.data(), elt_of(x.dtype()), y.data(), sums.data_as<double>(), weight.defined() ? weight.data() : nullptr,
      weight.defined() ? elt_of(weight.dtype()) : Elt::F32, n, x.dim(-1), static_cast<double>(width),
      static_cast<double>(eps));
  check_launch("rms_norm_with_sums");
  return y;
}

}  // namespace dattn::ops::cuda
