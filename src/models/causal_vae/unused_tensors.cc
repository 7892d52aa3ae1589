// Checking what a decode-only VAE left unread (see unused_tensors.h).
#include "models/causal_vae/unused_tensors.h"

#include <vector>

#include "dattn/core/error.h"

namespace dattn::causal_vae {

void require_only_ignored_unused(const WeightStore& store, std::initializer_list<std::string_view> ignored_prefixes,
                                 const std::string& model) {
  std::vector<std::string> rest;
  for (const auto& name : store.unused()) {
    bool ignored = false;
    for (std::string_view p : ignored_prefixes) ignored = ignored || name.starts_with(p);
    if (!ignored) rest.push_back(name);
  }
  if (rest.empty()) return;
  std::string list;
  for (std::size_t i = 0; i < rest.size() && i < 10; ++i) list += (i ? ", " : "") + rest[i];
  if (rest.size() > 10) list += ", ...";
  throw UserError(store.source() + ": " + std::to_string(rest.size()) + " tensors the " + model +
                  " does not use (a checkpoint for another config?): " + list);
}

}  // namespace dattn::causal_vae
