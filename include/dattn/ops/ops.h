#pragma once
// Every tensor op; each dispatches on its input's device (src/ops/*.cc) to a CPU or CUDA kernel.
#include "dattn/ops/activation.h"
#include "dattn/ops/conv.h"
#include "dattn/ops/elementwise.h"
#include "dattn/ops/embedding.h"
#include "dattn/ops/frames.h"
#include "dattn/ops/linear.h"
#include "dattn/ops/modulation.h"
#include "dattn/ops/norm.h"
#include "dattn/ops/patch.h"
#include "dattn/ops/reduce.h"
#include "dattn/ops/rope.h"
#include "dattn/ops/softmax.h"
