#include "dattn/core/device.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "core/cuda/device_info.h"
#include "dattn/core/error.h"
#include "dattn/core/run_context.h"

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
namespace {
// The device of the run context bound to this thread (device 0 when none is bound or none is visible).
int current_cuda_device() { return cuda::device_count() > 0 ? current_context(Device::CUDA).device_index() : 0; }
}  // namespace
int cuda_compute_capability() { return cuda::compute_capability(current_cuda_device()); }
std::string cuda_device_summary() { return cuda::device_summary(current_cuda_device()); }
std::string cuda_unavailable_reason() { return cuda::unavailable_reason(); }
std::int64_t cuda_free_memory_bytes() {
  if (cuda::device_count() == 0) return -1;
  const ContextScope bound(current_context(Device::CUDA));  // its device, made current
  return cuda::free_memory_bytes();
}
#else
bool built_with_cuda() { return false; }
int cuda_device_count() { return 0; }
int cuda_compute_capability() { return 0; }
std::string cuda_device_summary() { return "none (dattn was built without CUDA)"; }
std::string cuda_unavailable_reason() { return "this dattn was built without CUDA (DATTN_CUDA=off or no nvcc)"; }
std::int64_t cuda_free_memory_bytes() { return -1; }
#endif

void require_usable_device(Device device) {
  if (device == Device::CPU) return;
  if (const std::string why = cuda_unavailable_reason(); !why.empty())
    throw UserError("--device cuda: " + why + "; use --device cpu");
}

}  // namespace dattn
