#pragma once
// Breaks the layer rule on purpose (tests/layers/upward/README.md).
#include "dattn/pipeline/wan_t2v.h"
