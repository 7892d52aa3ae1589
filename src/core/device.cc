#include "dattn/core/device.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "core/cuda/device_info.h"

namespace dattn {

std::string_view device_name(Device d) { return d == Device::CPU ? "cpu" : "cuda"; }

std::optional<Device> parse_device(std::string_view name) {
  std::string s(name);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s == "cpu") return Device::CPU;
  if (s == "cuda" || s == "gpu") return Device::CUDA;
  return std::nullopt;
}

#ifdef DATTN_WITH_CUDA
bool built_with_cuda() { return true; }
int cuda_device_count() { return cuda::device_count(); }
int cuda_compute_capability() { return cuda::compute_capability(); }
std::string cuda_device_summary() { return cuda::device_summary(); }
#else
bool built_with_cuda() { return false; }
int cuda_device_count() { return 0; }
int cuda_compute_capability() { return 0; }
std::string cuda_device_summary() { return "none (dattn was built without CUDA)"; }
#endif

}  // namespace dattn
