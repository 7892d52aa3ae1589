#include "dattn/attention/registry.h"

#include <algorithm>
#include <cctype>

#include "attention/backends/backends.h"
#include "dattn/core/error.h"

namespace dattn {

const std::vector<const AttentionBackend*>& registered_backends() {
  // Canonical order: it is the order of every listing and of the platform-default search.
  static const std::vector<const AttentionBackend*> all = {&flash_attn_backend(), &torch_sdpa_backend(),
                                                           &sage_attn_backend(), &sparse_block_backend()};
  return all;
}

const AttentionBackend* find_backend(std::string_view name) {
  std::string upper(name);
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  if (upper == "SDPA") upper = "TORCH_SDPA";
  for (const AttentionBackend* b : registered_backends())
    if (b->name() == upper) return b;
  return nullptr;
}

std::string backend_name_list() {
  std::string s;
  for (const AttentionBackend* b : registered_backends()) s += (s.empty() ? "" : ", ") + std::string(b->name());
  return s;
}

const AttentionBackend& backend_by_name(std::string_view name) {
  if (const AttentionBackend* b = find_backend(name)) return *b;
  throw ConfigError("Unknown diffusion attention backend: '" + std::string(name) +
                    "'. Valid options are: " + backend_name_list());
}

const AttentionBackend* platform_default_backend(const AttentionShape& shape, Device device) {
  for (const char* name : {"FLASH_ATTN", "TORCH_SDPA"}) {
    const AttentionBackend* b = find_backend(name);
    if (b && b->supports(shape, device).ok) return b;
  }
  return nullptr;
}

}  // namespace dattn

namespace dattn {

Support backend_availability(const AttentionBackend& backend, Device device, const AttentionShape& nominal) {
  AttentionShape shape = nominal;
  for (DType t : backend.surface(device).dtypes) {
    shape.dtype = t;
    if (backend.supports(shape, device).ok) return Support::yes();
  }
  shape = nominal;
  Support s = backend.supports(shape, device);
  if (s.ok) return s;
  // The given dtype may simply be one the backend does not take; report the first surface dtype's
  // reason then, since it is the one that says why the device is out of reach.
  const auto dtypes = backend.surface(device).dtypes;
  if (!dtypes.empty()) {
    shape.dtype = dtypes.front();
    s = backend.supports(shape, device);
  }
  return s;
}

}  // namespace dattn
