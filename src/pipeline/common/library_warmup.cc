#include "pipeline/common/library_warmup.h"

#include <exception>

#include "dattn/attention/cuda_warmup.h"
#include "dattn/ops/cuda_libraries.h"

namespace dattn::pipeline {

JoiningThread prepare_libraries_in_background(const std::shared_ptr<RunContext>& context) {
  if (!context || context->device() != Device::CUDA) return {};
  return JoiningThread(std::thread([context] {
    try {
      const ContextScope bound(*context);
      ops::prepare_cuda_libraries();
      prepare_attention_cuda();  // the text encoders' attention (TORCH_SDPA) comes first
    } catch (const std::exception&) {
      // Not lost: the first GEMM or convolution makes the state itself and throws this error then.
    }
  }));
}

}  // namespace dattn::pipeline
