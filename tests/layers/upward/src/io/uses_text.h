// Breaks the layer rule on purpose (tests/layers/upward/README.md).
#include "text/utf8.h"
