// Breaks the backend rule on purpose (tests/layers/upward/README.md).
#include "attention/backends/sparse_block/mask.h"
