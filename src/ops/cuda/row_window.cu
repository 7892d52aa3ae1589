// copy_into on CUDA: one 2-D copy (an item's block of rows per "row" of the copy) on the current stream.
#include "ops/cuda/common.cuh"
#include "ops/cuda/cuda_ops.h"

namespace dattn::ops::cuda {

void copy_item_blocks(void* dst, std::size_t dst_pitch, const void* src, std::size_t bytes, std::int64_t items) {
  DATTN_CUDA_CHECK(cudaMemcpy2DAsync(dst, dst_pitch, src, bytes, bytes, static_cast<std::size_t>(items),
                                     cudaMemcpyDeviceToDevice, current_stream()));
}

}  // namespace dattn::ops::cuda
