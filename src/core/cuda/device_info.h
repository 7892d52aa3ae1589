#pragma once
// Queries of the CUDA runtime, compiled only in CUDA builds (device_info.cu).
#include <string>

namespace dattn::cuda {

int device_count();           // 0 when no driver or GPU is usable
// Why no device can be used ("" when one can): no driver at all, a driver too old for this runtime
// (with both versions), or no visible device.
std::string unavailable_reason();
int compute_capability(int device);     // major*10+minor; 0 without that device
// Free memory of the current device (cudaMemGetInfo), -1 when it cannot be asked.
long long free_memory_bytes();
std::string device_summary(int device);  // "NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB) x2" or why none

}  // namespace dattn::cuda
