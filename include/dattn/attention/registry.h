#pragma once
// The backends this build registers, in the order they are listed everywhere.
#include <string>
#include <string_view>
#include <vector>

#include "dattn/attention/backend.h"

namespace dattn {

// FLASH_ATTN, TORCH_SDPA, SAGE_ATTN, SPARSE_BLOCK.
const std::vector<const AttentionBackend*>& registered_backends();
// Any letter case; the alias SDPA means TORCH_SDPA. nullptr when unknown.
const AttentionBackend* find_backend(std::string_view name);
// The backend for `name`, or ConfigError: "Unknown diffusion attention backend: 'X'. Valid options
// are: FLASH_ATTN, TORCH_SDPA, SAGE_ATTN, SPARSE_BLOCK".
const AttentionBackend& backend_by_name(std::string_view name);
// "FLASH_ATTN, TORCH_SDPA, SAGE_ATTN, SPARSE_BLOCK"
std::string backend_name_list();

// Platform default for a problem on a device: the first of FLASH_ATTN, TORCH_SDPA that supports it;
// nullptr when neither does (the caller reports why).
const AttentionBackend* platform_default_backend(const AttentionShape& shape, Device device);

}  // namespace dattn

namespace dattn {

// Whether a backend can run anything on a device, decided by its support predicate on `nominal` (a
// model's shape, e.g. dattn/models/attention_roles.h) in each dtype of its surface, then in the dtype
// `nominal` has; the reason is the predicate's answer when none passes.
Support backend_availability(const AttentionBackend& backend, Device device, const AttentionShape& nominal);

}  // namespace dattn
