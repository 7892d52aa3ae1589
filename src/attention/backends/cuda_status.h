#pragma once
// The answers every backend gives for Device::CUDA before its own kernel predicate: no CUDA in this
// build, no visible device, or (while a backend has no kernel yet) no kernel.
#include <optional>
#include <string>
#include <string_view>

#include "dattn/attention/backend.h"
#include "dattn/core/device.h"

namespace dattn {

// Why CUDA cannot be used at all (no CUDA build, no device), or nullopt when it can.
inline std::optional<Support> cuda_unusable() {
  if (!built_with_cuda()) return Support::no("dattn was built without CUDA (DATTN_CUDA=off or no nvcc)");
  if (cuda_device_count() == 0) return Support::no("no CUDA device is visible");
  return std::nullopt;
}

inline Support cuda_kernel_missing(std::string_view backend) {
  if (auto no = cuda_unusable()) return *no;
  return Support::no(std::string(backend) + " has no CUDA kernel in this build yet");
}

}  // namespace dattn
