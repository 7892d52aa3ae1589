#pragma once
// Queries of the CUDA runtime, compiled only in CUDA builds (device_info.cu).
#include <string>

namespace dattn::cuda {

int device_count();           // 0 when no driver or GPU is usable
std::string device_summary();  // "NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB)" or why none

}  // namespace dattn::cuda
