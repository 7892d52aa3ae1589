#include "attention/backends/sage_attn/cuda_entry.h"

#include "dattn/core/error.h"
#ifdef DATTN_WITH_CUDA
#include "attention/backends/sage_attn/cuda/sage_cuda.h"
#endif

namespace dattn::sage {

void sage_attention_cuda_entry(const AttentionProblem& problem, SageKernel kernel) {
#ifdef DATTN_WITH_CUDA
  sage_attention_cuda(problem, kernel);
#else
  (void)problem;
  (void)kernel;
  throw UserError("SAGE_ATTN: dattn was built without CUDA");
#endif
}

void sage_quantize_only_cuda_entry(const AttentionProblem& problem) {
#ifdef DATTN_WITH_CUDA
  sage_quantize_only_cuda(problem);
#else
  (void)problem;
  throw UserError("SAGE_ATTN: dattn was built without CUDA");
#endif
}

SageQuantized sage_quantize_download_cuda_entry(const AttentionProblem& problem) {
#ifdef DATTN_WITH_CUDA
  return sage_quantize_download_cuda(problem);
#else
  (void)problem;
  throw UserError("SAGE_ATTN: dattn was built without CUDA");
#endif
}

}  // namespace dattn::sage
