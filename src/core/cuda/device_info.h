#pragma once
// Queries of the CUDA runtime, compiled only in CUDA builds (device_info.cu).
#include <string>

namespace dattn::cuda {

int device_count();           // 0 when no driver or GPU is usable
int compute_capability();     // device 0, major*10+minor; 0 without one
std::string device_summary();  // "NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB)" or why none

}  // namespace dattn::cuda
