#pragma once
// Whether a tensor holds NaN or Inf: the denoise loop asks it of the latents after every step and the
// pipeline of the decoded video, so a numeric failure stops the run at the step it happened in instead
// of ending as a video of NaN. One reduction on the tensor's device (CUDA: one kernel and an 8-byte
// copy back), small next to a step's work.
#include <cstdint>

#include "dattn/core/tensor.h"

namespace dattn::ops {

struct NonFinite {
  std::int64_t count = 0;  // NaN and Inf elements
  std::int64_t nan = 0;    // of which NaN
};

// fp32, bf16, fp16 or fp64 on the CPU or CUDA.
NonFinite count_nonfinite(const Tensor& x);

}  // namespace dattn::ops
