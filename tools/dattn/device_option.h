#pragma once
// The --device option's value, checked: "cpu" or "cuda".
#include <string>

#include "dattn/core/device.h"
#include "dattn/core/error.h"

namespace dattn::tool {

inline Device device_from_option(const std::string& text) {
  if (auto d = parse_device(text)) return *d;
  throw UserError("--device '" + text + "': expected cpu or cuda");
}

}  // namespace dattn::tool
