#pragma once
// A thin wrapper over the optional intermediate hook, so call sites stay one line and cost nothing when
// no hook is set.
#include <string>

#include "dattn/models/wan/transformer.h"

namespace dattn::wan {

struct Capture {
  const WanCapture* fn = nullptr;
  bool on() const { return fn && *fn; }
  void operator()(const std::string& name, const Tensor& value) const {
    if (on()) (*fn)(name, value);
  }
};

}  // namespace dattn::wan
