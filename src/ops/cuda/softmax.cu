// Row softmax (ops::softmax) for rows of a few thousand columns, as the scores of a VAE's attention over
// the pixels of a frame: one block per row, three passes over the row, which stays in L1/L2.
#include <cfloat>

#include "ops/cuda/frame_kernels.h"
#include "ops/cuda/common.cuh"

namespace dattn::ops::cuda {
namespace {

__global__ void softmax_kernel(float* s, i64 rows, i64 cols, float scale) {
  __shared__ float scratch[32];
  for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
    float* row = s + r * cols;
    float m = -FLT_MAX;
    for (i64 j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, row[j] * scale);
    m = block_max(m, scratch);
    float sum = 0.0f;
    for (i64 j = threadIdx.x; j < cols; j += blockDim.x) {
      const float e = expf(row[j] * scale - m);
      row[j] = e;
      sum += e;
    }
    const float inv = 1.0f / block_sum(sum, scratch);
    for (i64 j = threadIdx.x; j < cols; j += blockDim.x) row[j] *= inv;
    __syncthreads();  // scratch is reused by the next row's reductions
  }
}

}  // namespace

void softmax_rows(float* s, i64 rows, i64 cols, float scale) {
  if (rows == 0 || cols == 0) return;
  constexpr int kThreads = 512;
  const cudaStream_t stream = current_stream();
  const unsigned blocks = static_cast<unsigned>(rows < 65535 * 8 ? rows : 65535 * 8);
  softmax_kernel<<<blocks, kThreads, 0, stream>>>(s, rows, cols, scale);
  check_launch("softmax");
}

}  // namespace dattn::ops::cuda
