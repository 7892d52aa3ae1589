#pragma once
// The backends this build compiles in; registry.cc lists them in their canonical order.
#include "dattn/attention/backend.h"

namespace dattn {

const AttentionBackend& flash_attn_backend();
const AttentionBackend& torch_sdpa_backend();
const AttentionBackend& sage_attn_backend();
const AttentionBackend& sparse_block_backend();

}  // namespace dattn
