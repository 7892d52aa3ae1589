#include <cuda_runtime.h>
#include <dlfcn.h>

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

namespace {

std::string cuda_version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

// The driver's CUDA version (cuDriverGetVersion, e.g. 12040), 0 when no driver library loads. Asked
// through dlopen: the runtime reports "driver version is insufficient" both for an old driver and for
// none at all, and a user needs to know which.
int driver_cuda_version() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return 0;
  using GetVersion = int (*)(int*);
  int version = 0;
  if (auto get = reinterpret_cast<GetVersion>(dlsym(lib, "cuDriverGetVersion")); !get || get(&version) != 0)
    version = 0;
  dlclose(lib);
  return version;
}

}  // namespace

std::string unavailable_reason() {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err == cudaSuccess && n > 0) return {};
  cudaGetLastError();
  if (err == cudaSuccess || err == cudaErrorNoDevice)
    return "no CUDA device is visible (the NVIDIA driver is installed; check CUDA_VISIBLE_DEVICES)";
  const int driver = driver_cuda_version();
  if (driver == 0) return "no NVIDIA driver is installed (libcuda.so.1 cannot be loaded): no GPU to run on";
  if (err == cudaErrorInsufficientDriver || driver < CUDART_VERSION)
    return "the NVIDIA driver supports CUDA " + cuda_version_text(driver) + ", this dattn needs CUDA " +
           cuda_version_text(CUDART_VERSION) + " or newer: update the driver";
  return std::string("the CUDA runtime cannot use a device: ") + cudaGetErrorString(err);
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

long long free_memory_bytes() {
  std::size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return static_cast<long long>(free);
}

std::string device_summary(int device) {
  if (std::string why = unavailable_reason(); !why.empty()) return "none (" + why + ")";
  const int n = device_count();
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
