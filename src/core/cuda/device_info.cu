#include <cuda_runtime.h>

#include <cstdio>
#include <string>

#include "core/cuda/device_info.h"

namespace dattn::cuda {

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error so later calls start clean
    return 0;
  }
  return n;
}

int compute_capability(int device) {
  if (device < 0 || device >= device_count()) return 0;
  int major = 0, minor = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return major * 10 + minor;
}

std::string device_summary(int device) {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return std::string("none (") + cudaGetErrorString(err) + ")";
  }
  if (n == 0) return "none (no CUDA device)";
  if (device < 0 || device >= n) return "none (device " + std::to_string(device) + " of " + std::to_string(n) + ")";
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, device) != cudaSuccess) return "unknown (cudaGetDeviceProperties failed)";
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s (sm_%d%d, %d SMs, %.1f GiB)%s", p.name, p.major, p.minor,
                p.multiProcessorCount, p.totalGlobalMem / 1073741824.0,
                n > 1 ? (" x" + std::to_string(n)).c_str() : "");
  return buf;
}

}  // namespace dattn::cuda
