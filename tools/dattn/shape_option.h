#pragma once
// The --shape option (B,Sq,Sk,H,D) and the shape a command checks when none is given.
#include <string>

#include "dattn/attention/problem.h"
#include "dattn/core/device.h"

namespace dattn::tool {

// "B,Sq,Sk,H,D": batch, query tokens, key tokens, heads, head dim; heads_kv = heads, fp32, no mask, not
// validated. UserError naming the text and the item when it is not 5 integers.
AttentionShape shape_from_option(const std::string& text);

// The dtype checked on `device` when none is given: bf16 on CUDA, fp32 on CPU.
DType default_dtype(Device device);

// The --shape value (empty: the models layer's reference shape, Wan2.2-5B self-attention) in
// default_dtype(device), validated.
AttentionShape nominal_shape_option(const std::string& text, Device device);

}  // namespace dattn::tool
