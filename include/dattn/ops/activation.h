#pragma once
// Elementwise activations, computed in float32; the result has x's shape, device and dtype.
#include "dattn/core/tensor.h"

namespace dattn::ops {

// GELU with the tanh approximation (torch's approximate="tanh", diffusers' "gelu-approximate"):
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
Tensor gelu_tanh(const Tensor& x);

// Exact GELU (torch's nn.GELU() default, approximate="none"): 0.5 x (1 + erf(x / sqrt(2))).
Tensor gelu(const Tensor& x);

// x * sigmoid(x).
Tensor silu(const Tensor& x);

}  // namespace dattn::ops
