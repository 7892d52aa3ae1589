// prepare_attention_cuda (see cuda_warmup.h): a problem of 16 zero queries and keys, one head of 64.
#include "dattn/attention/cuda_warmup.h"

#include "dattn/attention/backend.h"
#include "dattn/attention/registry.h"
#include "dattn/core/device_memory.h"
#include "dattn/core/error.h"
#include "dattn/core/tensor.h"

namespace dattn {

void prepare_attention_cuda() {
#ifdef DATTN_WITH_CUDA
  AttentionProblem problem;
  problem.shape = AttentionShape{1, 16, 16, 1, 1, 64, DType::BF16};
  const Tensor q = Tensor::zeros({1, 16, 1, 64}, DType::BF16, Device::CUDA);
  Tensor out = Tensor::empty({1, 16, 1, 64}, DType::BF16, Device::CUDA);
  problem.q = problem.k = problem.v = q.data();
  problem.out = out.data();
  const AttentionBackend& sdpa = backend_by_name("TORCH_SDPA");
  run_attention(sdpa, problem, extra_with_defaults(sdpa, {{"kernel", "gemm"}}), Device::CUDA);
  device_synchronize();
#else
  throw UserError("this dattn was built without CUDA (DATTN_CUDA=off or no nvcc)");
#endif
}

}  // namespace dattn
