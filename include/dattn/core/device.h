#pragma once
// Devices a computation can run on, and what this build and machine offer.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dattn {

enum class Device { CPU, CUDA };

std::string_view device_name(Device d);           // "cpu" or "cuda"
std::optional<Device> parse_device(std::string_view name);

// True when this binary was compiled with the CUDA code (DATTN_CUDA=auto found nvcc, or on).
bool built_with_cuda();
// Number of CUDA devices visible at run time (0 without CUDA, a driver or a GPU).
int cuda_device_count();
// Why CUDA cannot run anything here, "" when it can: this build has no CUDA, no NVIDIA driver is
// installed, the driver is older than this build's CUDA runtime (both versions named), no device is visible.
std::string cuda_unavailable_reason();
// Free memory of the current run context's device in bytes (cudaMemGetInfo); -1 without a device.
std::int64_t cuda_free_memory_bytes();
// Throws UserError "--device cuda: <why>; use --device cpu" when `device` cannot run work here, so a
// command refuses before reading any weight. No-op for the CPU.
void require_usable_device(Device device);
// Compute capability of the current run context's device (run_context.h; device 0 when none is bound)
// as major*10+minor (90 on Hopper); 0 without a device.
int cuda_compute_capability();
// "NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB)" for that device, or why there is none.
std::string cuda_device_summary();

}  // namespace dattn
