#pragma once
// A decode-only VAE leaves the encoder's tensors unread; anything else left over in its checkpoint means the
// checkpoint does not match the configuration (as WeightStore::require_all_used reports for whole models).
#include <initializer_list>
#include <string>
#include <string_view>

#include "dattn/io/weight_store.h"

namespace dattn::causal_vae {

// UserError naming `model`, the count and the first ten tensors of `store` still unused whose names start
// with none of `ignored_prefixes`.
void require_only_ignored_unused(const WeightStore& store, std::initializer_list<std::string_view> ignored_prefixes,
                                 const std::string& model);

}  // namespace dattn::causal_vae
