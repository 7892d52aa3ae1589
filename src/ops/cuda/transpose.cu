// CUDA kernel of ops::transpose2d: 32 x 32 tiles through shared memory, coalesced on both sides.
#include <stdexcept>
#include <string>

#include "ops/cuda/frame_kernels.h"
#include "ops/cuda/common.cuh"

namespace dattn::ops::cuda {
namespace {

constexpr int kTile = 32, kRows = 8;  // a tile, read and written by 32 x 8 threads

__global__ void transpose_kernel(const float* x, float* y, i64 rows, i64 cols) {
  __shared__ float tile[kTile][kTile + 1];  // +1: no bank conflicts on the column reads
  const i64 c0 = i64{blockIdx.x} * kTile, r0 = i64{blockIdx.y} * kTile;
  for (int i = threadIdx.y; i < kTile; i += kRows) {
    const i64 r = r0 + i, c = c0 + threadIdx.x;
    if (r < rows && c < cols) tile[i][threadIdx.x] = x[r * cols + c];
  }
  __syncthreads();
  for (int i = threadIdx.y; i < kTile; i += kRows) {
    const i64 c = c0 + i, r = r0 + threadIdx.x;  // output row c, column r
    if (r < rows && c < cols) y[c * rows + r] = tile[threadIdx.x][i];
  }
}

}  // namespace

void transpose2d(const float* x, float* y, i64 rows, i64 cols) {
  if (rows == 0 || cols == 0) return;
  const i64 gx = (cols + kTile - 1) / kTile, gy = (rows + kTile - 1) / kTile;
  if (gy > 65535) throw std::length_error("transpose2d: " + std::to_string(rows) + " rows exceed the CUDA grid");
  const dim3 grid(static_cast<unsigned>(gx), static_cast<unsigned>(gy)), block(kTile, kRows);
  transpose_kernel<<<grid, block, 0, current_stream()>>>(x, y, rows, cols);
  check_launch("transpose2d");
}

}  // namespace dattn::ops::cuda
