#include "dattn/ops/cuda_libraries.h"

#include "dattn/core/error.h"
#ifdef DATTN_WITH_CUDA
#include "ops/cuda/conv3d.h"
#include "ops/cuda/gemm.h"
#endif

namespace dattn::ops {

void prepare_cuda_libraries() {
#ifdef DATTN_WITH_CUDA
  cuda::prepare_gemm();    // the text encoder's first GEMM comes first
  cuda::prepare_conv3d();  // cudnnCreate loads cuDNN's sub-libraries: the slower of the two
#else
  throw UserError("this dattn was built without CUDA (DATTN_CUDA=off or no nvcc)");
#endif
}

}  // namespace dattn::ops
