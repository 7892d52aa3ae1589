// Breaks the layer rule on purpose (tests/layers/upward/README.md).
#include "dattn/models/wan/config.h"
