#pragma once
// The --device option's value, checked: "auto" (CUDA when a device is visible, else the CPU), "cpu" or
// "cuda".
#include <string>

#include "dattn/core/auto_choice.h"
#include "dattn/core/device.h"
#include "dattn/core/error.h"

namespace dattn::tool {

inline Device device_from_option(const std::string& text) {
  if (text == "auto") return auto_device();
  if (auto d = parse_device(text)) return *d;
  throw UserError("--device '" + text + "': expected auto, cpu or cuda");
}

}  // namespace dattn::tool
