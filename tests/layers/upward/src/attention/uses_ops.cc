// Breaks the layer rule on purpose (tests/layers/upward/README.md).
#include "dattn/ops/ops.h"
#include "dattn/core/error.h"
