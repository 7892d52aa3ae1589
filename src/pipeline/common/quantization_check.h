#pragma once
// Whether the pipeline options' quantization can run on their device (checked before any weight is read).
#include "dattn/pipeline/pipeline.h"

namespace dattn::pipeline {

// UserError for --quantization fp8 on CUDA: its kernels are built but have not yet run on a GPU
// (docs/fp8.md); the CPU runs the same quantized arithmetic.
void check_quantization(const PipelineOptions& options);

}  // namespace dattn::pipeline
