#pragma once
// The answers every backend gives for Device::CUDA before its own kernel predicate: no CUDA in this
// build, no driver, a driver too old, no visible device, or (while a backend has no kernel yet) no kernel.
#include <optional>
#include <string>
#include <string_view>

#include "dattn/attention/backend.h"
#include "dattn/core/device.h"

namespace dattn {

// Why CUDA cannot be used at all (no CUDA build, no device), or nullopt when it can.
inline std::optional<Support> cuda_unusable() {
  // No driver, a driver too old for this build, or no visible device: each said as such.
  if (std::string why = cuda_unavailable_reason(); !why.empty()) return Support::no(why);
  return std::nullopt;
}

inline Support cuda_kernel_missing(std::string_view backend) {
  if (auto no = cuda_unusable()) return *no;
  return Support::no(std::string(backend) + " has no CUDA kernel in this build yet");
}

}  // namespace dattn
