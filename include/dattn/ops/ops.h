#pragma once
// Every tensor op (CPU today; CUDA implementations plug into the same dispatch in src/ops/*.cc).
#include "dattn/ops/activation.h"
#include "dattn/ops/elementwise.h"
#include "dattn/ops/embedding.h"
#include "dattn/ops/linear.h"
#include "dattn/ops/modulation.h"
#include "dattn/ops/norm.h"
#include "dattn/ops/patch.h"
#include "dattn/ops/rope.h"
