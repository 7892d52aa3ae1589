// Breaks the backend rule on purpose (tests/layers/upward/README.md).
#include "attention/backends/flash_attn/cuda/wgmma.cuh"
#include "attention/backends/sage_attn/own.h"
