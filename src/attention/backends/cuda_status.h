#pragma once
// The answer every backend gives for Device::CUDA while it has no CUDA kernel in this build.
#include <string>
#include <string_view>

#include "dattn/attention/backend.h"
#include "dattn/core/device.h"

namespace dattn {

inline Support cuda_kernel_missing(std::string_view backend) {
  if (!built_with_cuda()) return Support::no("dattn was built without CUDA (DATTN_CUDA=off or no nvcc)");
  if (cuda_device_count() == 0) return Support::no("no CUDA device is visible");
  return Support::no(std::string(backend) + " has no CUDA kernel in this build yet");
}

}  // namespace dattn
