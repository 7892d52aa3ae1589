#pragma once
// Queries of the CUDA runtime, compiled only in CUDA builds (device_info.cu).
#include <string>

namespace dattn::cuda {

int device_count();           // 0 when no driver or GPU is usable
int compute_capability(int device);     // major*10+minor; 0 without that device
std::string device_summary(int device);  // "NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB) x2" or why none

}  // namespace dattn::cuda
