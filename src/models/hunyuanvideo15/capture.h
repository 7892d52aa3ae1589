#pragma once
// A thin wrapper over the optional intermediate hook, so call sites stay one line and cost nothing when
// no hook is set.
#include <string>

#include "dattn/models/hunyuanvideo15/transformer.h"

namespace dattn::hv15 {

struct Capture {
  const Hv15Capture* fn = nullptr;
  bool on() const { return fn && *fn; }
  void operator()(const std::string& name, const Tensor& value) const {
    if (on()) (*fn)(name, value);
  }
};

}  // namespace dattn::hv15
