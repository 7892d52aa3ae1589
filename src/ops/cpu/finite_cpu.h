#pragma once
// CPU kernel of include/dattn/ops/finite.h (arguments already checked by src/ops/finite.cc).
#include "dattn/ops/finite.h"

namespace dattn::ops::cpu {

NonFinite count_nonfinite(const Tensor& x);

}  // namespace dattn::ops::cpu
