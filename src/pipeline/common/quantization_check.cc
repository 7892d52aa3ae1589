#include "pipeline/common/quantization_check.h"

#include "dattn/core/error.h"

namespace dattn::pipeline {

void check_quantization(const PipelineOptions& options) {
  if (options.quantization == Quantization::Fp8 && options.device == Device::CUDA)
    throw UserError("--quantization fp8 on --device cuda: the FP8 GEMM and quantization kernels are built but not yet "
                    "validated on a GPU (docs/fp8.md, 'Status'); --device cpu runs the same quantized arithmetic");
}

}  // namespace dattn::pipeline
